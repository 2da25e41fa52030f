//===- AmdgpuKernargTest.cpp - The kernarg layout HIP copies, checked -----===//
//
// HIP copies the bytes the runtime packs (one KernelArgs, GpuKernel::launch)
// into the kernarg segment the code object declares, and the kernel reads
// each field at the offset AMDGPU's data layout gives the IR struct. All
// three must agree, for every target and pipeline, or a kernel reads
// garbage pointers: this compiles real code objects and reads their
// metadata back (llvm::msgpack over the ELF note, AmdgpuCodeObject.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/AmdgpuCodeObject.h"
#include "compiler/KernelCompiler.h"
#include "ir/KernelAbi.h"
#include "ir/KernelAbiIR.h"
#include "runtime/device/KernelAbiCheck.h"
#include "specs/EncodedName.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/TargetParser/Triple.h"
#include "gtest/gtest.h"
#include <cstddef>

using namespace fmhajit;

namespace {

/// Where the runtime puts each field: offsetof, by KernelArgsField.
struct FieldOffset {
  KernelArgsField index;
  size_t offset;
};
const FieldOffset kFieldOffsets[] = {
#define KERNEL_ARG(Name, Index, Type, Doc)                                     \
  FieldOffset{k##Index, offsetof(KernelArgs, Name)},
#include "ir/KernelArgs.def"
};

// The kernel reads field i at the IR struct's offset under AMDGPU's data
// layout; the runtime writes it at offsetof.
TEST(AmdgpuKernarg, IrStructMatchesKernelArgs) {
  llvm::LLVMContext ctx;
  llvm::DataLayout layout(
      llvm::Triple("amdgcn-amd-amdhsa").computeDataLayout());
  const llvm::StructLayout *ir = layout.getStructLayout(kernelArgsType(ctx));
  for (const FieldOffset &f : kFieldOffsets)
    EXPECT_EQ(ir->getElementOffset(f.index), f.offset) << "field " << f.index;
  EXPECT_EQ(ir->getSizeInBytes(), sizeof(KernelArgs));
  EXPECT_EQ(ir->getAlignment().value(), alignof(KernelArgs));
}

class AmdgpuCodeObjectMetadata : public ::testing::TestWithParam<const char *> {
};

// The code object declares one by-value argument covering the whole
// KernelArgs, and a kernarg segment of exactly its size and alignment.
TEST_P(AmdgpuCodeObjectMetadata, KernargSegmentIsOneKernelArgs) {
  KernelSpec spec = resolvedSpec(GetParam());
  auto object = compileToStage(spec, Stage::Obj);
  ASSERT_TRUE(bool(object)) << llvm::toString(object.takeError());
  auto kernels = readCodeObjectKernels(*object);
  ASSERT_TRUE(bool(kernels)) << llvm::toString(kernels.takeError());
  ASSERT_EQ(kernels->size(), 1u);
  const CodeObjectKernel &k = kernels->front();
  EXPECT_EQ(k.name, encodeName(spec));
  EXPECT_EQ(k.symbol, encodeName(spec) + ".kd");
  EXPECT_EQ(k.kernargSegmentSize, sizeof(KernelArgs));
  EXPECT_EQ(k.kernargSegmentAlign, alignof(KernelArgs));
  ASSERT_EQ(k.args.size(), 1u);
  EXPECT_EQ(k.args[0].offset, 0u);
  EXPECT_EQ(k.args[0].size, sizeof(KernelArgs));
  EXPECT_EQ(k.args[0].valueKind, "by_value");
  // The rest of what HIP schedules by: the tiles' LDS, the wave, no spills.
  const ArchInfo &arch = *findArch(spec.target);
  EXPECT_EQ(k.groupSegmentFixedSize, tileFootprintBytes(spec, arch));
  EXPECT_EQ(k.wavefrontSize, arch.waveSize);
  EXPECT_EQ(k.maxFlatWorkgroupSize, spec.warps * arch.waveSize);
  EXPECT_EQ(k.privateSegmentFixedSize, 0u);
  EXPECT_EQ(k.vgprSpillCount, 0u);
  EXPECT_EQ(k.sgprSpillCount, 0u);
  // And the runtime's own check accepts it.
  auto checked = checkKernelAbi(*object, encodeName(spec));
  EXPECT_TRUE(bool(checked)) << llvm::toString(checked.takeError());
}

INSTANTIATE_TEST_SUITE_P(
    Targets, AmdgpuCodeObjectMetadata,
    ::testing::Values("dtype=bf16,d=128,target=gfx90a",
                      "dtype=fp16,d=64,target=gfx942",
                      "dtype=bf16,d=256,mask=causal,lse=1,target=gfx950",
                      "dtype=fp16,d=128,mask=window,target=gfx1100",
                      "dtype=bf16,d=96,softcap=1,target=gfx1201",
                      "dtype=fp32,d=128,pipeline=simt,target=gfx942",
                      "dtype=bf16,d=128,pipeline=simt,target=gfx1100"));

TEST(AmdgpuCodeObject, RuntimeRejectsAnotherKernelOrNoCodeObject) {
  KernelSpec spec = resolvedSpec("dtype=bf16,d=64,target=gfx942");
  auto object = compileToStage(spec, Stage::Obj);
  ASSERT_TRUE(bool(object)) << llvm::toString(object.takeError());
  auto missing = checkKernelAbi(*object, "fmha_not_this_one");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(
      llvm::toString(missing.takeError()).find("declares no kernel named"),
      std::string::npos);
  auto garbage = readCodeObjectKernels("not an ELF file");
  ASSERT_FALSE(bool(garbage));
  EXPECT_NE(llvm::toString(garbage.takeError())
                .find("not a valid AMDGPU code object"),
            std::string::npos);
}

} // namespace
