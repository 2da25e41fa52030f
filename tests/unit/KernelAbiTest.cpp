//===- KernelAbiTest.cpp - FwdParams in C++ and in IR agree ---------------===//
//
// The kernels read FwdParams through the LLVM struct built from
// kFwdParamsFields; the runtime writes the C++ struct. Every field's offset
// (and the size) must agree under the data layouts of every target, or a
// kernel reads one field where the runtime wrote another.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "ir/KernelAbiIR.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/LLVMContext.h"
#include "gtest/gtest.h"
#include <cstddef>
#include <algorithm>
#include <iterator>

using namespace fmhajit;

namespace {
// In field order, one per entry of kFwdParamsFields.
const size_t kOffsets[] = {
    offsetof(FwdParams, q),           offsetof(FwdParams, k),
    offsetof(FwdParams, v),           offsetof(FwdParams, o),
    offsetof(FwdParams, lse),         offsetof(FwdParams, cuSeqlensQ),
    offsetof(FwdParams, cuSeqlensK),  offsetof(FwdParams, alibiSlopes),
    offsetof(FwdParams, qStrides),    offsetof(FwdParams, kStrides),
    offsetof(FwdParams, vStrides),    offsetof(FwdParams, oStrides),
    offsetof(FwdParams, batch),       offsetof(FwdParams, headsQ),
    offsetof(FwdParams, headsKv),     offsetof(FwdParams, seqlenQ),
    offsetof(FwdParams, seqlenK),     offsetof(FwdParams, numQTiles),
    offsetof(FwdParams, scale),       offsetof(FwdParams, softcap),
    offsetof(FwdParams, windowLeft),  offsetof(FwdParams, windowRight),
    offsetof(FwdParams, oAccum),      offsetof(FwdParams, lseAccum),
    offsetof(FwdParams, blockTable),  offsetof(FwdParams, cacheSeqlens),
    offsetof(FwdParams, kNew),        offsetof(FwdParams, vNew),
    offsetof(FwdParams, rotaryCos),   offsetof(FwdParams, rotarySin),
    offsetof(FwdParams, kNewStrides), offsetof(FwdParams, vNewStrides),
    offsetof(FwdParams, numSplits),   offsetof(FwdParams, maxPagesPerSeq),
    offsetof(FwdParams, log2PageSize), offsetof(FwdParams, rotaryDim),
    offsetof(FwdParams, rotaryInterleaved)};

struct Layout {
  const char *target;
  const char *dataLayout;
};
// The data layouts of the host (x86-64), NVPTX64 and AMDGPU (generic
// address space 0 pointers are 64-bit there too).
const Layout kLayouts[] = {
    {"x86-64", "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"},
    {"nvptx64", "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"},
    {"amdgcn", "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:"
               "32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:"
               "128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"},
};

class KernelAbi : public ::testing::TestWithParam<Layout> {};

TEST_P(KernelAbi, IrStructMatchesCppStruct) {
  ASSERT_EQ(std::size(kOffsets), std::size(kFwdParamsFields)) << "a field is missing from a list";
  ASSERT_EQ(unsigned(kRotaryInterleaved) + 1, std::size(kFwdParamsFields));
  llvm::LLVMContext ctx;
  llvm::StructType *type = fwdParamsType(ctx);
  llvm::DataLayout layout(GetParam().dataLayout);
  const llvm::StructLayout *sl = layout.getStructLayout(type);
  for (unsigned i = 0; i < std::size(kOffsets); ++i)
    EXPECT_EQ(sl->getElementOffset(i), kOffsets[i]) << "field " << i;
  EXPECT_EQ(sl->getSizeInBytes(), sizeof(FwdParams));
}

INSTANTIATE_TEST_SUITE_P(Targets, KernelAbi, ::testing::ValuesIn(kLayouts),
                         [](const ::testing::TestParamInfo<Layout> &info) {
                           std::string name = info.param.target;
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });
} // namespace
