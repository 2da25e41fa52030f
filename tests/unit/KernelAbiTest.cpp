//===- KernelAbiTest.cpp - KernelArgs in C++ and in IR agree --------------===//
//
// The kernels read KernelArgs through the LLVM struct built from
// kKernelArgsKinds; the runtime writes the C++ struct. Both come from
// KernelArgs.def, but by different routes (C++ types and their layout rules,
// IR types and the target's data layout): every field's offset (and the
// size) must agree under the data layouts of every target, or a kernel reads
// one field where the runtime wrote another. Emitted IR names each field it
// reads, which the lit tests match.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "ir/KernelAbiIR.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <cstddef>
#include <iterator>

using namespace fmhajit;

namespace {
// Where the runtime writes each field, in field order.
const size_t kOffsets[] = {
#define KERNEL_ARG(Name, Index, Type, Doc) offsetof(KernelArgs, Name),
#include "ir/KernelArgs.def"
};

struct Layout {
  const char *target;
  const char *dataLayout;
};
// The data layouts of the host (x86-64), NVPTX64 and AMDGPU (generic
// address space 0 pointers are 64-bit there too).
const Layout kLayouts[] = {
    {"x86-64", "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-"
               "n8:16:32:64-S128"},
    {"nvptx64", "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"},
    {"amdgcn", "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:"
               "32-p7:160:256:256:"
               "32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-"
               "v32:32-v48:64-v96:"
               "128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-"
               "S32-A5-G1-ni:7:8:9"},
};

class KernelAbi : public ::testing::TestWithParam<Layout> {};

TEST_P(KernelAbi, IrStructMatchesCppStruct) {
  llvm::LLVMContext ctx;
  llvm::StructType *type = kernelArgsType(ctx);
  llvm::DataLayout layout(GetParam().dataLayout);
  const llvm::StructLayout *sl = layout.getStructLayout(type);
  ASSERT_EQ(type->getNumElements(), std::size(kOffsets));
  for (unsigned i = 0; i < std::size(kOffsets); ++i)
    EXPECT_EQ(sl->getElementOffset(i), kOffsets[i])
        << "field " << kKernelArgsNames[i];
  EXPECT_EQ(sl->getSizeInBytes(), sizeof(KernelArgs));
}

INSTANTIATE_TEST_SUITE_P(Targets, KernelAbi, ::testing::ValuesIn(kLayouts),
                         [](const ::testing::TestParamInfo<Layout> &info) {
                           std::string name = info.param.target;
                           name.erase(
                               std::remove(name.begin(), name.end(), '-'),
                               name.end());
                           return name;
                         });

// The lit tests find a field by its name in the IR: each read must go
// through an address named after the field it indexes, and each stride
// through one named after the field and the stride.
TEST(KernelAbiIR, ReadsNameTheFieldTheyIndex) {
  llvm::LLVMContext ctx;
  llvm::Module module("m", ctx);
  auto *fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                              {llvm::PointerType::get(ctx, 0)}, false),
      llvm::Function::ExternalLinkage, "f", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  ArgsReader reader(b, fn->getArg(0));
  for (unsigned i = 0; i < kNumKernelArgsFields; ++i) {
    auto field = KernelArgsField(i);
    std::string name = std::string("args.") + kKernelArgsNames[i];
    if (kKernelArgsKinds[i] == ArgKind::VariantTensors) { // read by pieces
      auto *gep = llvm::cast<llvm::GetElementPtrInst>(reader.address(field));
      EXPECT_EQ(gep->getName(), name);
      continue;
    }
    llvm::Value *value = kKernelArgsKinds[i] == ArgKind::Strides
                             ? reader.stride(field, 1)
                             : reader.get(field);
    auto *load = llvm::cast<llvm::LoadInst>(value);
    auto *gep = llvm::cast<llvm::GetElementPtrInst>(load->getPointerOperand());
    if (kKernelArgsKinds[i] == ArgKind::Strides) {
      EXPECT_EQ(gep->getName(), name + ".row");
      gep = llvm::cast<llvm::GetElementPtrInst>(gep->getPointerOperand());
    }
    EXPECT_EQ(gep->getName(), name);
    EXPECT_EQ(gep->getSourceElementType(), kernelArgsType(ctx));
    EXPECT_EQ(llvm::cast<llvm::ConstantInt>(gep->getOperand(2))->getZExtValue(),
              i)
        << name;
  }
}
} // namespace
