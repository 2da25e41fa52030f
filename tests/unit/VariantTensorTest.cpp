//===- VariantTensorTest.cpp - fmhajit_tensor: slots, bounds, refusals ----===//
//
// A variant reads run-time tensors with fmhajit_tensor(slot, index)
// (docs/variants.md#run-time-tensors): the slots each function reads are
// found when it is checked, every target's module is left with bounded
// loads and no call, and the host build reads element index inside the
// tensor and 0 outside it, whatever the index.
//
//===----------------------------------------------------------------------===//
#include "compiler/variants/HostVariant.h"
#include "compiler/variants/VariantCompiler.h"
#include "ir/Variant.h"
#include "ir/VariantTensorReads.h"
#include "specs/ArchTable.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Support/Error.h"
#include <climits>
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
// score_mod reads slots 0 and 2, mask_mod slot 1 (through a helper, whose
// slot argument is a constant once inlined).
const char *const kReadsThreeSlots =
    "static float at(int slot, long i) { return fmhajit_tensor(slot, i); }\n"
    "float score_mod(float s, int b, int h, int q, int k) {\n"
    "  return s + at(0, q - k) + 2 * fmhajit_tensor(2, h);\n}\n"
    "bool mask_mod(int b, int h, int q, int k) {\n"
    "  return fmhajit_tensor(1, k) >= 0;\n}\n";

TEST(VariantTensors, SlotsAreFoundPerFunctionOnEveryTarget) {
  for (const char *target : {"host", "sm_90a", "gfx942"}) {
    llvm::LLVMContext ctx;
    auto compiled = compileVariant({kReadsThreeSlots, "v.cpp"},
                                   variantTriple(*findArch(target)), ctx);
    ASSERT_TRUE(bool(compiled))
        << target << ": " << llvm::toString(compiled.takeError());
    EXPECT_EQ(compiled->tensors.scoreMod, 0b101u) << target;
    EXPECT_EQ(compiled->tensors.maskMod, 0b010u) << target;
    EXPECT_EQ(compiled->tensors.count(), 3u) << target;
    EXPECT_EQ(compiled->tensors.describe(),
              "slot 0 (score_mod), slot 1 (mask_mod), slot 2 (score_mod)");
    // Each read is a load now; the accessor is gone.
    const llvm::Module &m = *compiled->module;
    EXPECT_FALSE(m.getFunction(kTensorReadSymbol)) << target;
    for (const llvm::Function *fn : {findScoreMod(m), findMaskMod(m)}) {
      ASSERT_TRUE(fn);
      EXPECT_EQ(fn->arg_size(), fn == findScoreMod(m) ? 6u : 5u);
      for (const llvm::Instruction &inst : llvm::instructions(*fn))
        EXPECT_FALSE(llvm::isa<llvm::CallBase>(inst) &&
                     !llvm::isa<llvm::IntrinsicInst>(inst))
            << target;
    }
  }
}

TEST(VariantTensors, ASlotBelowTheHighestStillCounts) {
  VariantTensorUse use{0b100, 0};
  EXPECT_EQ(use.count(), 3u);
  EXPECT_EQ(use.describe(), "slot 2 (score_mod)");
  EXPECT_EQ(VariantTensorUse{}.count(), 0u);
  EXPECT_EQ(VariantTensorUse{}.describe(), "no tensor");
}

struct Refusal {
  const char *source;
  const char *message; ///< a part of the error
};

class VariantTensorRefusals : public testing::TestWithParam<Refusal> {};

TEST_P(VariantTensorRefusals, NameTheSlot) {
  llvm::LLVMContext ctx;
  auto compiled = compileVariant({GetParam().source, "v.cpp"},
                                 variantTriple(*findArch("host")), ctx);
  ASSERT_FALSE(bool(compiled));
  std::string error = llvm::toString(compiled.takeError());
  EXPECT_NE(error.find(GetParam().message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Table, VariantTensorRefusals,
    testing::Values(
        Refusal{"float score_mod(float s, int b, int h, int q, int k) {\n"
                "  return s + fmhajit_tensor(h, q);\n}\n",
                "score_mod calls fmhajit_tensor with a slot computed at run "
                "time: write the slot as a constant (0 to 3)"},
        Refusal{"bool mask_mod(int b, int h, int q, int k) {\n"
                "  return fmhajit_tensor(4, k) > 0;\n}\n",
                "mask_mod reads tensor slot 4: slots are 0 to 3"},
        Refusal{"float score_mod(float s, int b, int h, int q, int k) {\n"
                "  return s + fmhajit_tensor(-1, k);\n}\n",
                "score_mod reads tensor slot -1: slots are 0 to 3"},
        // Another fmhajit_tensor (a C++ overload) is not the accessor.
        Refusal{"float fmhajit_tensor(int slot, int index);\n"
                "float score_mod(float s, int b, int h, int q, int k) {\n"
                "  return s + fmhajit_tensor(0, k);\n}\n",
                "score_mod calls fmhajit_tensor(int, int), which is outside "
                "the allowed set"},
        // Reads stay reads: the tensors are the only memory a variant
        // touches, through the accessor only.
        Refusal{"float score_mod(float s, int b, int h, int q, int k) {\n"
                "  float t[4] = {s, s, s, s};\n"
                "  t[q & 3] = fmhajit_tensor(0, k);\n"
                "  return t[k & 3];\n}\n",
                "score_mod writes memory"}));

// The host build reads the caller's table: element i inside the tensor, 0
// for any index outside it, extreme ones included.
TEST(VariantTensors, HostReadsInsideAndZeroOutside) {
  auto host = HostVariant::create(
      {"float score_mod(float s, int b, int h, int q, int k) {\n"
       "  return s + fmhajit_tensor(1, long(q) * 1000000000L + k);\n}\n"
       "bool mask_mod(int b, int h, int q, int k) {\n"
       "  return fmhajit_tensor(0, k) > 0;\n}\n",
       "v.cpp"});
  ASSERT_TRUE(bool(host)) << llvm::toString(host.takeError());
  EXPECT_EQ((*host)->tensors().count(), 2u);
  const float mask[] = {1, 0, 1};
  const float bias[] = {10, 20, 30, 40};
  VariantTensors table{};
  table.slot[0] = {mask, 3};
  table.slot[1] = {bias, 4};
  const HostVariant &variant = **host;
  auto score = [&](float s, int b, int h, int q, int k,
                   const VariantTensors *t) {
    return variant.scoreMod(s, b, h, q, k, t);
  };
  auto visible = [&](int b, int h, int q, int k, const VariantTensors *t) {
    return variant.maskMod(b, h, q, k, t);
  };
  EXPECT_EQ(score(0.5f, 0, 0, 0, 0, &table), 10.5f);
  EXPECT_EQ(score(0.5f, 0, 0, 0, 3, &table), 40.5f);
  EXPECT_EQ(score(0.5f, 0, 0, 0, 4, &table), 0.5f);  // one past the end
  EXPECT_EQ(score(0.5f, 0, 0, 0, -1, &table), 0.5f); // before it
  EXPECT_EQ(score(0.5f, 0, 0, 3, 0, &table), 0.5f);  // 3e9: far past it
  EXPECT_EQ(score(0.5f, 0, 0, -3, 2, &table), 0.5f); // far before it
  EXPECT_EQ(score(0.5f, 0, 0, 0, INT_MIN, &table), 0.5f);
  EXPECT_TRUE(visible(0, 0, 0, 0, &table));
  EXPECT_FALSE(visible(0, 0, 0, 1, &table));
  EXPECT_TRUE(visible(0, 0, 0, 2, &table));
  EXPECT_FALSE(visible(0, 0, 0, 3, &table)); // outside: 0, not > 0
}
} // namespace
