//===- VariantLanesTest.cpp - Variant functions widened to vector lanes ---===//
//
// laneVersion (ir/VariantLanes.h) turns a variant's scalar score_mod or
// mask_mod into one function on vectors, which the host's vector tiles call
// instead of the scalar one once per lane. These tests check its shape on
// real variants compiled for the host: the math stays vector, a tensor
// read goes lane by lane, and code that is not one block is left to the
// per-lane call. The numbers are checked end to end by the host variant
// tests (HostVariantTest, HostVariantTensorTest), whose kernels call it.
//
//===----------------------------------------------------------------------===//
#include "ir/VariantLanes.h"
#include "compiler/variants/VariantCompiler.h"
#include "ir/Variant.h"
#include "specs/ArchTable.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>

using namespace fmhajit;
using namespace llvm;

namespace {
constexpr unsigned kLanes = 8;

/// The variant's module for the host; null (and a failure) where it does
/// not compile.
std::unique_ptr<Module> compileForHost(const char *source, LLVMContext &ctx) {
  auto compiled =
      compileVariant({source, "v.cpp"}, variantTriple(*findArch("host")), ctx);
  if (!compiled) {
    ADD_FAILURE() << toString(compiled.takeError());
    return nullptr;
  }
  return std::move(compiled->module);
}

bool verifies(const Function &fn) {
  std::string problems;
  raw_string_ostream out(problems);
  bool broken = verifyFunction(fn, &out);
  EXPECT_FALSE(broken) << problems;
  return !broken;
}

/// Scalar float or i32 values that some instruction of \p fn makes: none is
/// left where every step has a vector form.
unsigned scalarArithmetic(const Function &fn) {
  unsigned count = 0;
  for (const Instruction &inst : instructions(fn))
    if ((inst.getType()->isFloatTy() || inst.getType()->isIntegerTy(32)) &&
        !isa<ExtractElementInst>(inst) && !isa<LoadInst>(inst))
      ++count;
  return count;
}

TEST(VariantLanes, ASoftCapBecomesVectorMath) {
  LLVMContext ctx;
  std::unique_ptr<Module> m = compileForHost(
      "float score_mod(float s, int b, int h, int q, int k) {\n"
      "  return 30.0f * std::tanh(s / 30.0f) + (q > k ? 0.5f : 0.0f);\n}\n",
      ctx);
  ASSERT_TRUE(m);
  Function *scalar = findScoreMod(*m);
  ASSERT_TRUE(scalar);
  Function *lanes = laneVersion(*scalar, kLanes);
  ASSERT_TRUE(lanes);
  EXPECT_TRUE(verifies(*lanes));
  EXPECT_TRUE(isLaneVersion(*lanes));
  EXPECT_FALSE(isLaneVersion(*scalar));
  auto *vecFloat = FixedVectorType::get(Type::getFloatTy(ctx), kLanes);
  auto *vecInt = FixedVectorType::get(Type::getInt32Ty(ctx), kLanes);
  EXPECT_EQ(lanes->getReturnType(), vecFloat);
  EXPECT_EQ(lanes->getArg(0)->getType(), vecFloat);
  for (unsigned i = 1; i <= 4; ++i)
    EXPECT_EQ(lanes->getArg(i)->getType(), vecInt);
  EXPECT_TRUE(lanes->getArg(5)->getType()->isPointerTy()); // the table
  EXPECT_EQ(scalarArithmetic(*lanes), 0u);
  bool vectorTanh = false;
  for (const Instruction &inst : instructions(*lanes))
    if (const auto *call = dyn_cast<IntrinsicInst>(&inst))
      vectorTanh |= call->getIntrinsicID() == Intrinsic::tanh &&
                    call->getType() == vecFloat;
  EXPECT_TRUE(vectorTanh);
  // Asked again, the same function.
  EXPECT_EQ(laneVersion(*scalar, kLanes), lanes);
}

TEST(VariantLanes, AMaskReturnsOneBitALane) {
  LLVMContext ctx;
  std::unique_ptr<Module> m =
      compileForHost("bool mask_mod(int b, int h, int q, int k) {\n"
                     "  return q / 64 == k / 64 || k < 4;\n}\n",
                     ctx);
  ASSERT_TRUE(m);
  Function *lanes = laneVersion(*findMaskMod(*m), kLanes);
  ASSERT_TRUE(lanes);
  EXPECT_TRUE(verifies(*lanes));
  EXPECT_EQ(lanes->getReturnType(),
            FixedVectorType::get(Type::getInt1Ty(ctx), kLanes));
  EXPECT_EQ(scalarArithmetic(*lanes), 0u);
}

// The table's address and length are read once; each lane's element is its
// own load, and what follows is vector math again.
TEST(VariantLanes, ATensorReadGoesLaneByLane) {
  LLVMContext ctx;
  std::unique_ptr<Module> m =
      compileForHost("float score_mod(float s, int b, int h, int q, int k) {\n"
                     "  return s + 2.0f * fmhajit_tensor(0, q - k + 128);\n}\n",
                     ctx);
  ASSERT_TRUE(m);
  Function *lanes = laneVersion(*findScoreMod(*m), kLanes);
  ASSERT_TRUE(lanes);
  EXPECT_TRUE(verifies(*lanes));
  unsigned floatLoads = 0;
  for (const Instruction &inst : instructions(*lanes))
    if (const auto *load = dyn_cast<LoadInst>(&inst))
      floatLoads += load->getType()->isFloatTy();
  EXPECT_EQ(floatLoads, kLanes);
}

TEST(VariantLanes, CodeOfManyBlocksStaysWithTheScalarCall) {
  LLVMContext ctx;
  std::unique_ptr<Module> m = compileForHost(
      "float score_mod(float s, int b, int h, int q, int k) {\n"
      "  for (int i = 0; i < (k & 7); ++i) s = s * 0.5f + 1.0f;\n"
      "  return s;\n}\n",
      ctx);
  ASSERT_TRUE(m);
  Function *scalar = findScoreMod(*m);
  ASSERT_TRUE(scalar);
  ASSERT_GT(scalar->size(), 1u) << "clang left the loop as one block";
  EXPECT_EQ(laneVersion(*scalar, kLanes), nullptr);
  EXPECT_EQ(m->getFunction((scalar->getName() + ".lanes8").str()), nullptr);
}
} // namespace
