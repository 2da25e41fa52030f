//===- NumericsTest.cpp - Conversions, host tensors, problems, comparison -===//
//
// The pieces kernels are checked with must themselves be right: fp16/bf16
// conversions over every bit pattern, problem validation messages, and
// Compare catching the failures it exists for. The reference and the .npy
// bundle are tested in NumericsReferenceTest.cpp and NumericsNpyTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/numerics/AttentionProblem.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/HalfPrecision.h"
#include "runtime/numerics/HostTensor.h"
#include "runtime/numerics/Tolerance.h"
#include "specs/Errors.h"
#include "llvm/ADT/bit.h"
#include "gtest/gtest.h"
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

using namespace fmhajit;
using llvm::bit_cast;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

bool isFp16NaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool isBf16NaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

//===-- Conversions -------------------------------------------------------===//

TEST(HalfPrecision, Fp16RoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    float f = fp16ToFloat(h);
    if (isFp16NaN(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << bits;
      // Payload and sign kept, made quiet.
      ASSERT_EQ(floatToFp16(f), h | 0x0200) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(floatToFp16(f), h) << std::hex << bits;
#ifdef __FLT16_MAX__
    // The compiler's conversion is an independent implementation.
    ASSERT_EQ(bit_cast<uint32_t>(f),
              bit_cast<uint32_t>(static_cast<float>(bit_cast<_Float16>(h))))
        << std::hex << bits;
#endif
  }
}

TEST(HalfPrecision, Bf16RoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    uint16_t b = static_cast<uint16_t>(bits);
    float f = bf16ToFloat(b);
    ASSERT_EQ(bit_cast<uint32_t>(f), bits << 16);
    if (isBf16NaN(b))
      ASSERT_EQ(floatToBf16(f), b | 0x0040) << std::hex << bits;
    else
      ASSERT_EQ(floatToBf16(f), b) << std::hex << bits;
  }
}

struct RoundingCase {
  float value;
  uint16_t bits;
};

TEST(HalfPrecision, Fp16RoundsToNearestEven) {
  const RoundingCase cases[] = {
      {1.0f + 0x1p-11f, 0x3c00},            // tie, 1.0 is even
      {1.0f + 3 * 0x1p-11f, 0x3c02},        // tie, 1 + 2^-9 is even
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01}, // just past the tie
      {65504.0f, 0x7bff},                   // largest half
      {65519.99f, 0x7bff},                  // below the overflow tie
      {65520.0f, 0x7c00},                   // tie with 2^16: goes to infinity
      {-1e6f, 0xfc00},
      {kInf, 0x7c00},
      {-kInf, 0xfc00},
      {-0.0f, 0x8000},
      {0x1p-14f, 0x0400},            // smallest normal
      {0x1p-14f - 0x1p-25f, 0x0400}, // tie between 0x3ff and 0x400
      {0x1p-24f, 0x0001},            // smallest subnormal
      {0x1p-25f, 0x0000},            // tie with zero
      {0x1p-25f * 1.0000001f, 0x0001},
      {3 * 0x1p-25f, 0x0002}, // tie between 1 and 2 ulps
      {5 * 0x1p-25f, 0x0002}, // tie between 2 and 3 ulps
      {-7 * 0x1p-25f, 0x8004},
      {1e-30f, 0x0000}, // float subnormal range and below
      {0x1p-149f, 0x0000},
  };
  for (const RoundingCase &c : cases)
    EXPECT_EQ(floatToFp16(c.value), c.bits) << c.value;
}

TEST(HalfPrecision, Bf16RoundsToNearestEven) {
  const RoundingCase cases[] = {
      {1.0f + 0x1p-8f, 0x3f80},            // tie, 1.0 is even
      {1.0f + 3 * 0x1p-8f, 0x3f82},        // tie, 1 + 2^-6 is even
      {1.0f + 0x1p-8f + 0x1p-20f, 0x3f81}, // just past the tie
      {-1.5f, 0xbfc0},
      {std::numeric_limits<float>::max(), 0x7f80}, // rounds up to infinity
      {kInf, 0x7f80},
      {-0.0f, 0x8000},
      {0x1p-133f, 0x0001}, // float subnormals keep their top bits
  };
  for (const RoundingCase &c : cases)
    EXPECT_EQ(floatToBf16(c.value), c.bits) << c.value;
  EXPECT_EQ(floatToBf16(bit_cast<float>(0x7f800001u)), 0x7fc0); // not inf
  EXPECT_EQ(floatToBf16(bit_cast<float>(0xff800001u)), 0xffc0);
}

#ifdef __FLT16_MAX__
TEST(HalfPrecision, Fp16MatchesTheCompilerOnRandomFloats) {
  std::mt19937 rng(7);
  for (int n = 0; n < 1 << 20; ++n) {
    float f = bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(floatToFp16(f), bit_cast<uint16_t>(static_cast<_Float16>(f)))
        << std::hexfloat << f;
  }
}
#endif

TEST(HalfPrecision, RoundToDType) {
  EXPECT_EQ(roundToDType(0.1f, DType::F32), 0.1f);
  EXPECT_EQ(roundToDType(0.1f, DType::F16), fp16ToFloat(floatToFp16(0.1f)));
  EXPECT_EQ(roundToDType(0.1f, DType::BF16), 0.10009765625f);
}

//===-- HostTensor --------------------------------------------------------===//

class HostTensorTest : public ::testing::TestWithParam<DType> {};

TEST_P(HostTensorTest, FillNormalIsSeededRoundedAndNeverZero) {
  HostTensor a(GetParam(), 20000), b(GetParam(), 20000), c(GetParam(), 20000);
  a.fillNormal(42);
  b.fillNormal(42);
  c.fillNormal(43);
  EXPECT_EQ(a.sizeInBytes(), 20000u * dtypeBytes(GetParam()));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.sizeInBytes()), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.sizeInBytes()), 0);
  double sum = 0, sumSq = 0;
  for (float f : a.toFloat()) {
    ASSERT_NE(f, 0.0f);
    ASSERT_EQ(roundToDType(f, GetParam()), f);
    sum += f;
    sumSq += double(f) * f;
  }
  EXPECT_NEAR(sum / 20000, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(sumSq / 20000), 1.0, 0.05);
}

TEST_P(HostTensorTest, SetRoundsAndPoisonFillsNaN) {
  HostTensor t(GetParam(), 3);
  t.set(1, 0.1f);
  EXPECT_EQ(t.get(0), 0.0f);
  EXPECT_EQ(t.get(1), roundToDType(0.1f, GetParam()));
  t.poison();
  for (float f : t.toFloat())
    EXPECT_TRUE(std::isnan(f));
}

INSTANTIATE_TEST_SUITE_P(DTypes, HostTensorTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));

//===-- AttentionProblem::validate ----------------------------------------===//

struct ValidationCase {
  const char *name;
  std::function<void(KernelSpec &)> editSpec;
  std::function<void(AttentionProblem &)> editProblem;
  const char *message; ///< a part of the one expected message; "" for none
};

void noSpecChange(KernelSpec &) {}

const ValidationCase kValidationCases[] = {
    {"Defaults", noSpecChange, [](AttentionProblem &) {}, ""},
    {"GqaOk", noSpecChange,
     [](AttentionProblem &p) { p.headsQ = 8, p.headsKv = 2; }, ""},
    {"HeadsNotMultiple", noSpecChange,
     [](AttentionProblem &p) { p.headsQ = 6, p.headsKv = 4; },
     "heads_q 6 is not a multiple of heads_kv 4"},
    {"ZeroHeads", noSpecChange, [](AttentionProblem &p) { p.headsKv = 0; },
     "must both be >= 1"},
    {"ZeroBatch", noSpecChange, [](AttentionProblem &p) { p.batch = 0; },
     "batch 0 must be >= 1"},
    {"ZeroSeqlenQ", noSpecChange, [](AttentionProblem &p) { p.seqlenQ = 0; },
     "seqlen_q 0 and seqlen_k 1 must both be >= 1"},
    {"NegativeSeqlenK", noSpecChange,
     [](AttentionProblem &p) { p.seqlenK = -3; }, "seqlen_k -3"},
    {"HeadDimMismatch", noSpecChange, [](AttentionProblem &p) { p.d = 32; },
     "differ from the spec's d=64"},
    {"WindowOnCausal", [](KernelSpec &s) { s.mask = Mask::Causal; },
     [](AttentionProblem &p) { p.windowLeft = 3; },
     "window (3, -1) needs a spec with mask=window; this spec has "
     "mask=causal"},
    {"WindowUnbounded", [](KernelSpec &s) { s.mask = Mask::Window; },
     [](AttentionProblem &) {}, ""},
    {"WindowBelowMinusOne", [](KernelSpec &s) { s.mask = Mask::Window; },
     [](AttentionProblem &p) { p.windowRight = -2; }, "is invalid"},
    {"SoftcapOnPlainSpec", noSpecChange,
     [](AttentionProblem &p) { p.softcap = 30; },
     "softcap 30 needs a spec with softcap=1"},
    {"SoftcapMissing", [](KernelSpec &s) { s.softcap = true; },
     [](AttentionProblem &) {}, "give a finite softcap value c > 0"},
    {"SoftcapNegative", [](KernelSpec &s) { s.softcap = true; },
     [](AttentionProblem &p) { p.softcap = -1; }, "got -1"},
    {"SoftcapOk", [](KernelSpec &s) { s.softcap = true; },
     [](AttentionProblem &p) { p.softcap = 30; }, ""},
    {"ScaleNaN", noSpecChange,
     [](AttentionProblem &p) { p.scale = std::nanf(""); }, "must be finite"},
    {"ScaleNegative", noSpecChange,
     [](AttentionProblem &p) { p.scale = -0.125f; },
     "scale -0.125 must be finite and > 0"},
    {"VarlenOnPlainSpec", noSpecChange,
     [](AttentionProblem &p) { p.seqlensQ = {3}, p.seqlensK = {3}; },
     "need a spec with varlen=1"},
    {"VarlenMissing", [](KernelSpec &s) { s.varlen = true; },
     [](AttentionProblem &) {}, "give the query and key length"},
    {"VarlenSizes", [](KernelSpec &s) { s.varlen = true; },
     [](AttentionProblem &p) { p.seqlensQ = {3, 4}, p.seqlensK = {1, 2, 3}; },
     "varlen_q has 2 lengths but varlen_k has 3"},
    {"VarlenBatch", [](KernelSpec &s) { s.varlen = true; },
     [](AttentionProblem &p) { p.seqlensQ = {3, 4}, p.seqlensK = {1, 2}; },
     "batch 1 does not match the 2 varlen sequences"},
    {"VarlenZeroLength", [](KernelSpec &s) { s.varlen = true; },
     [](AttentionProblem &p) {
       p.batch = 2, p.seqlensQ = {3, 0}, p.seqlensK = {1, 2};
     },
     "every varlen sequence length must be >= 1"},
    {"VarlenOk", [](KernelSpec &s) { s.varlen = true; },
     [](AttentionProblem &p) {
       p.batch = 2, p.seqlensQ = {3, 4}, p.seqlensK = {1, 2};
     },
     ""},
    {"RowsOverflow", noSpecChange,
     [](AttentionProblem &p) { p.seqlenQ = 1 << 20, p.headsQ = 4096; },
     "4294967296 query rows"},
    {"RowsSaturate", noSpecChange,
     [](AttentionProblem &p) {
       p.batch = 1 << 30, p.seqlenK = int64_t(1) << 40;
     },
     "32-bit row index"},
    {"SlopesOnPlainSpec", noSpecChange,
     [](AttentionProblem &p) { p.alibiSlopes = {0.5f}; },
     "ALiBi slopes need a spec with bias=alibi"},
    {"SlopesCount", [](KernelSpec &s) { s.bias = Bias::Alibi; },
     [](AttentionProblem &p) { p.headsQ = 2, p.alibiSlopes = {0.5f}; },
     "got 1 ALiBi slopes for 2 query heads"},
    {"SinksOnPlainSpec", noSpecChange,
     [](AttentionProblem &p) { p.sinks = {0.5f}; },
     "sinks need a spec with sink=1"},
    {"SinksCount", [](KernelSpec &s) { s.sink = true; },
     [](AttentionProblem &p) { p.headsQ = 2, p.sinks = {0.5f}; },
     "got 1 sinks for 2 query heads"},
    {"SinkPlusInfinity", [](KernelSpec &s) { s.sink = true; },
     [](AttentionProblem &p) { p.sinks = {INFINITY}; },
     "sinks must be finite, or -inf"},
    {"SinkMinusInfinityIsNone", [](KernelSpec &s) { s.sink = true; },
     [](AttentionProblem &p) { p.sinks = {-INFINITY}; }, ""},
    // Sinks may come with the tensors at run time.
    {"SinkWithoutValues", [](KernelSpec &s) { s.sink = true; },
     [](AttentionProblem &) {}, ""},
};

class ProblemValidation : public ::testing::TestWithParam<ValidationCase> {};

TEST_P(ProblemValidation, OneClearMessage) {
  KernelSpec spec;
  spec.d = 64;
  GetParam().editSpec(spec);
  AttentionProblem problem = AttentionProblem::forSpec(spec);
  GetParam().editProblem(problem);
  Problems problems = takeProblems(problem.validate(spec));
  if (!*GetParam().message) {
    EXPECT_TRUE(problems.messages.empty()) << problems.messages.front();
    return;
  }
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_EQ(problems.kind, ErrorKind::Usage);
  EXPECT_NE(problems.messages[0].find(GetParam().message), std::string::npos)
      << problems.messages[0];
}

INSTANTIATE_TEST_SUITE_P(Cases, ProblemValidation,
                         ::testing::ValuesIn(kValidationCases),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

TEST(ProblemValidationAll, ReportsEveryProblem) {
  KernelSpec spec;
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.headsQ = 3, p.headsKv = 2, p.softcap = 1, p.windowLeft = 4;
  EXPECT_EQ(takeProblems(p.validate(spec)).messages.size(), 3u);
}

TEST(AttentionProblem, DerivedSizes) {
  KernelSpec spec;
  spec.d = 16, spec.dv = 8, spec.varlen = true;
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.batch = 3, p.headsQ = 4, p.headsKv = 2;
  p.seqlensQ = {3, 1, 5}, p.seqlensK = {4, 6, 2};
  ASSERT_EQ(takeProblems(p.validate(spec)).messages.size(), 0u);
  EXPECT_EQ(p.cuSeqlensQ(), (std::vector<int32_t>{0, 3, 4, 9}));
  EXPECT_EQ(p.cuSeqlensK(), (std::vector<int32_t>{0, 4, 10, 12}));
  EXPECT_EQ(p.maxSeqlenQ(), 5);
  EXPECT_EQ(p.maxSeqlenK(), 6);
  EXPECT_EQ(p.qShape(), (llvm::SmallVector<int64_t, 4>{9, 4, 16}));
  EXPECT_EQ(p.vShape(), (llvm::SmallVector<int64_t, 4>{12, 2, 8}));
  EXPECT_EQ(p.lseShape(), (llvm::SmallVector<int64_t, 4>{4, 9}));
  EXPECT_EQ(p.resolvedScale(), 0.25f);
}

TEST(AttentionProblem, DefaultAlibiSlopesFollowThePaper) {
  // get_slopes(12) of ofirpress/attention_with_linear_biases.
  const double expected[] = {0.5,
                             0.25,
                             0.125,
                             0.0625,
                             0.03125,
                             0.015625,
                             0.0078125,
                             0.00390625,
                             0.7071067811865476,
                             0.35355339059327373,
                             0.17677669529663687,
                             0.08838834764831843};
  std::vector<float> slopes = defaultAlibiSlopes(12);
  ASSERT_EQ(slopes.size(), 12u);
  for (size_t h = 0; h < 12; ++h)
    EXPECT_EQ(slopes[h], static_cast<float>(expected[h])) << h;
  EXPECT_EQ(defaultAlibiSlopes(1), std::vector<float>{0x1p-8f});
  std::vector<float> four = defaultAlibiSlopes(4);
  EXPECT_EQ(four, (std::vector<float>{0.25f, 0x1p-4f, 0x1p-6f, 0x1p-8f}));
}

//===-- Compare -----------------------------------------------------------===//

TEST(Compare, IdenticalOutputsPass) {
  CompareResult r = compareOutputs({1.0f, -2.0f}, {1.0, -2.0}, {0.5f, -kInf},
                                   {0.5, kNegInf}, DType::F32);
  EXPECT_TRUE(r.pass) << r.summary();
  EXPECT_EQ(r.summary().rfind("PASS", 0), 0u);
  EXPECT_EQ(r.refMaxAbs, 2.0);
}

TEST(Compare, CatchesAPoisonedElement) {
  CompareResult r =
      compareOutputs({1.0f, std::nanf("")}, {1.0, 2.0}, {}, {}, DType::BF16);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.nonFinite, 1u);
  EXPECT_EQ(r.summary().rfind("FAIL", 0), 0u);
  EXPECT_NE(r.summary().find("1 non-finite"), std::string::npos);
}

TEST(Compare, CatchesOneWrongElement) {
  std::vector<float> o(1000, 1.0f);
  std::vector<double> ref(1000, 1.0);
  o[617] = 1.05f; // the rest is exact, so only max_abs can see it
  CompareResult r = compareOutputs(o, ref, {}, {}, DType::BF16);
  EXPECT_FALSE(r.pass) << r.summary();
  EXPECT_EQ(r.worstIndex, 617u);
  EXPECT_NEAR(r.maxAbs, 0.05, 1e-6);
  EXPECT_LT(r.relL2, toleranceFor(DType::BF16).relL2);
}

TEST(Compare, OutputRoundingPassesEachDType) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    std::mt19937_64 rng(1);
    std::normal_distribution<double> normal;
    std::vector<double> ref(4096);
    std::vector<float> o(4096);
    for (size_t i = 0; i < ref.size(); ++i)
      o[i] = roundToDType(static_cast<float>(ref[i] = normal(rng)), t);
    CompareResult r = compareOutputs(o, ref, {}, {}, t);
    EXPECT_TRUE(r.pass) << r.summary();
  }
}

TEST(Compare, LseInfinitiesMustMatch) {
  auto lseCase = [](float got, double want) {
    return compareOutputs({0.0f}, {0.0}, {got}, {want}, DType::F32);
  };
  EXPECT_TRUE(lseCase(-kInf, kNegInf).pass);
  EXPECT_FALSE(lseCase(-kInf, 1.0).pass);
  EXPECT_FALSE(lseCase(1.0f, kNegInf).pass);
  EXPECT_FALSE(lseCase(std::nanf(""), 1.0).pass);
  EXPECT_FALSE(lseCase(1.001f, 1.0).pass);
  EXPECT_EQ(lseCase(1.0f, kNegInf).lseMismatch, 1u);
}

TEST(Compare, AllMaskedReferenceNeedsZeros) {
  EXPECT_TRUE(
      compareOutputs({0.0f, 0.0f}, {0.0, 0.0}, {}, {}, DType::F16).pass);
  EXPECT_FALSE(
      compareOutputs({0.0f, 0.1f}, {0.0, 0.0}, {}, {}, DType::F16).pass);
}

TEST(Tolerance, TightensWithPrecision) {
  EXPECT_LT(toleranceFor(DType::F32).relL2, toleranceFor(DType::F16).relL2);
  EXPECT_LT(toleranceFor(DType::F16).relL2, toleranceFor(DType::BF16).relL2);
}

// A bf16 -> fp32 kernel may round P to bf16 for its products (GPU
// pipelines, the host's AMX tiles): it is held to bf16's row, not fp32's.
TEST(Tolerance, SixteenBitInputsKeepTheirRowWithWiderOutputs) {
  EXPECT_EQ(toleranceFor(DType::BF16, DType::F32).relL2,
            toleranceFor(DType::BF16).relL2);
  EXPECT_EQ(toleranceFor(DType::F16, DType::F32).maxAbs,
            toleranceFor(DType::F16).maxAbs);
  EXPECT_EQ(toleranceFor(DType::F32, DType::F32).relL2,
            toleranceFor(DType::F32).relL2);
  EXPECT_EQ(backwardToleranceFor(DType::BF16, DType::F32).relL2,
            toleranceFor(DType::BF16).relL2);
  EXPECT_LT(backwardToleranceFor(DType::F32, DType::F32).relL2,
            toleranceFor(DType::F16).relL2);
}

} // namespace
