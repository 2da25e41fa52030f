//===- VariantCompilerTest.cpp - Variants: compiled, checked, refused -----===//
#include "compiler/variants/VariantCompiler.h"
#include "compiler/variants/HostVariant.h"
#include "ir/Variant.h"
#include "specs/ArchTable.h"
#include "llvm/Support/Error.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {
std::string errorOf(const std::string &text,
                    llvm::StringRef triple = "x86_64-unknown-linux-gnu") {
  llvm::LLVMContext ctx;
  auto compiled = compileVariant({text, "v.cpp"}, triple, ctx);
  if (compiled)
    return "";
  return llvm::toString(compiled.takeError());
}

TEST(VariantCompiler, CompilesForEveryTriple) {
  const char *text = "float score_mod(float s, int b, int h, int q, int k) {\n"
                     "  return 30.f * std::tanh(s / 30.f) - abs(q - k);\n}\n"
                     "bool mask_mod(int b, int h, int q, int k) {\n"
                     "  return q / 64 == k / 64;\n}\n";
  for (const char *target : {"host", "sm_90a", "gfx942"}) {
    llvm::LLVMContext ctx;
    auto compiled =
        compileVariant({text, "v.cpp"}, variantTriple(*findArch(target)), ctx);
    ASSERT_TRUE(bool(compiled))
        << target << ": " << llvm::toString(compiled.takeError());
    EXPECT_TRUE(findScoreMod(*compiled->module)) << target;
    EXPECT_TRUE(findMaskMod(*compiled->module)) << target;
    EXPECT_EQ(compiled->tensors.count(), 0u) << target;
  }
}

// applyScoreMod skips the round trip through natural units for a score_mod
// that adds a term to its score; any other keeps it.
TEST(VariantCompiler, FindsScoreModsThatAddToTheirScore) {
  auto adds = [](const char *body) {
    std::string text =
        std::string(
            "float score_mod(float s, int b, int h, int q, int k) {\n") +
        body + "\n}\n";
    llvm::LLVMContext ctx;
    auto compiled = compileVariant({text, "v.cpp"}, "nvptx64-nvidia-cuda", ctx);
    EXPECT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    return compiled && addsToItsScore(*findScoreMod(*compiled->module));
  };
  EXPECT_TRUE(adds("return s - std::exp2(-float(h + 1)) * float(q - k);"));
  EXPECT_TRUE(adds("return float(q % 7) + s;"));
  EXPECT_TRUE(adds("return q > k ? s - 1.f : s + 2.f;"));
  EXPECT_FALSE(adds("return 30.f * std::tanh(s / 30.f);"));
  EXPECT_FALSE(adds("return s * 0.5f;"));
  EXPECT_FALSE(adds("return s - s * s;"));
  EXPECT_FALSE(adds("return float(q - k);"));
}

struct Refusal {
  const char *source;
  const char *message; ///< a part of the error
};

class VariantRefusals : public testing::TestWithParam<Refusal> {};

TEST_P(VariantRefusals, NameWhatTheVariantDid) {
  std::string error = errorOf(GetParam().source);
  EXPECT_NE(error.find(GetParam().message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Table, VariantRefusals,
    testing::Values(
        Refusal{"inline int f(int x) { return x; }",
                "defines neither score_mod nor mask_mod"},
        Refusal{"float score_mod(float s, int b, int h, int q) { return s; }",
                "score_mod must be `float score_mod(float score, int b, int "
                "h, int q, int k)`; found `score_mod(float, int, int, int)`"},
        Refusal{"int mask_mod(int b, int h, int q, int k) { return 1; }",
                "mask_mod must be `bool mask_mod"},
        Refusal{"float sinf(float);\nfloat score_mod(float s, int b, int h, "
                "int q, int k) { return sinf(s); }",
                "score_mod calls sinf(float), which is outside the allowed "
                "set"},
        Refusal{"float g(float);\nfloat score_mod(float s, int b, int h, int "
                "q, int k) { return g(s); }",
                "score_mod calls g(float), which is outside the allowed set"},
        Refusal{"int f(int n) { return n <= 0 ? 0 : 1 + f(n - 1); }\nbool "
                "mask_mod(int b, int h, int q, int k) { return f(q) > k; }",
                "f recurses"},
        Refusal{"int counter;\nbool mask_mod(int b, int h, int q, int k) { "
                "return ++counter > 3; }",
                "uses the global variable counter"},
        Refusal{
            "bool mask_mod(int b, int h, int q, int k) { *(int *)(long)q = 1; "
            "return true; }",
            "mask_mod turns integers into pointers"},
        Refusal{"bool mask_mod(int b, int h, int q, int k) { int t[4] = {}; "
                "t[q & 3] = k; return t[k & 3] > 0; }",
                "mask_mod writes memory"},
        Refusal{"bool mask_mod(int b, int h, int q, int k) { return q / k > "
                "0; }",
                "mask_mod divides integers by a value that may be 0"},
        Refusal{"float score_mod(float s, int b, int h, int q, int k) { "
                "float t[4] = {1, 2, 3, 4}; return s + t[q & 3]; }",
                "uses the global variable"}));

// clang's own messages: file:line:col, the line and the caret.
TEST(VariantCompiler, ReportsClangDiagnosticsWithCaret) {
  std::string error = errorOf("float score_mod(float s, int b, int h, int q, "
                              "int k) {\n  return s + undeclared;\n}\n");
  EXPECT_NE(error.find("v.cpp:2:14: error: use of undeclared identifier "
                       "'undeclared'"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("^"), std::string::npos) << error;
}

TEST(VariantCompiler, WarningsAreErrors) {
  std::string error =
      errorOf("bool mask_mod(int b, int h, int q, int k) {\n  int unused = "
              "q;\n  return k <= q;\n}\n");
  EXPECT_NE(error.find("v.cpp:2:7: error: unused variable"), std::string::npos)
      << "[" << error << "]";
}

TEST(VariantCompiler, HashIsOfTheTextOnly) {
  EXPECT_EQ(hashVariant("a").hex.size(), 16u);
  EXPECT_EQ(hashVariant("a"), hashVariant("a"));
  EXPECT_NE(hashVariant("a"), hashVariant("b"));
}

// The host build the reference calls computes what the source says.
TEST(HostVariant, CallsTheUsersFunctions) {
  auto host = HostVariant::create(
      {"float score_mod(float s, int b, int h, int q, int k) {\n"
       "  return s * std::exp(-0.5f * (q - k)) + b + h;\n}\n"
       "bool mask_mod(int b, int h, int q, int k) { return k <= q; }\n",
       "v.cpp"});
  ASSERT_TRUE(bool(host)) << llvm::toString(host.takeError());
  VariantTensors none{};
  EXPECT_NEAR((*host)->scoreMod(2.0f, 1, 3, 5, 3, &none),
              2 * std::exp(-1.0) + 4, 1e-5);
  EXPECT_TRUE((*host)->maskMod(0, 0, 5, 5, &none));
  EXPECT_FALSE((*host)->maskMod(0, 0, 5, 6, &none));
}
} // namespace
