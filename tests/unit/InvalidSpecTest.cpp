//===- InvalidSpecTest.cpp - Bad specs and names, each rejected by key ----===//
//
// One row per mistake a user can make: the input, whether it is spec text
// (parsed then validated) or an encoded name (decoded), and a piece of text
// the error must contain, usually "key=value", so the user is told which key
// is wrong.
//
//===----------------------------------------------------------------------===//
#include "specs/EncodedName.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/StringExtras.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

enum class Input { Spec, Name };

struct Rejection {
  const char *label; ///< the test's name
  Input kind;
  std::string text;
  const char *mentions; ///< some error message contains this
};

void PrintTo(const Rejection &r, std::ostream *os) { *os << r.label; }

const std::string kLongName = "fmha_fwd_bf16_d128" + std::string(200, 'x');

const Rejection kRejections[] = {
    // Spec text: syntax.
    {"Empty", Input::Spec, "", "key=value"},
    {"Blank", Input::Spec, " \t\n", "key=value"},
    {"NotAPair", Input::Spec, "family", "'family' is not a key=value pair"},
    {"TrailingComma", Input::Spec, "d=64,", "key=value"},
    {"UnknownKey", Input::Spec, "family=fwd,colour=red",
     "unknown key 'colour'"},
    {"KeyCase", Input::Spec, "D=128", "unknown key 'D'"},
    {"EmptyKey", Input::Spec, "=128", "unknown key ''"},
    {"DuplicateKey", Input::Spec, "d=64,mask=causal,d=64",
     "key 'd' is given twice"},
    // Spec text: numbers and flags.
    {"EmptyNumber", Input::Spec, "d=", "d=:"},
    {"NotANumber", Input::Spec, "d=abc", "d=abc"},
    {"NegativeNumber", Input::Spec, "bm=-64", "bm=-64"},
    {"PlusSign", Input::Spec, "d=+64", "d=+64"},
    {"HexNumber", Input::Spec, "d=0x40", "d=0x40"},
    {"FractionalNumber", Input::Spec, "d=64.0", "d=64.0"},
    {"Overflow32", Input::Spec, "d=4294967296", "d=4294967296"},
    {"Overflow16", Input::Spec, "bn=65536", "bn=65536"},
    {"HugeNumber", Input::Spec, "warps=" + std::string(40, '9'), "warps=999"},
    {"FlagTwo", Input::Spec, "softcap=2", "softcap=2"},
    {"FlagWord", Input::Spec, "lse=yes", "lse=yes"},
    // Spec text: values of enum keys.
    {"UnknownFamily", Input::Spec, "family=fwd2", "family=fwd2"},
    {"UnknownDType", Input::Spec, "dtype=fp64", "dtype=fp64"},
    {"UnknownOut", Input::Spec, "out=int8", "out=int8"},
    {"UnknownMask", Input::Spec, "mask=causal_tl", "mask=causal_tl"},
    {"UnknownBias", Input::Spec, "bias=relative", "bias=relative"},
    {"UnknownPipeline", Input::Spec, "pipeline=tensor", "pipeline=tensor"},
    {"EmptyTarget", Input::Spec, "target=", "target="},
    {"UnknownTarget", Input::Spec, "target=sm_70", "target=sm_70"},
    {"TargetCase", Input::Spec, "target=SM_90A", "target=SM_90A"},
    // Validation: dtypes.
    {"Fp8OnSm80", Input::Spec, "dtype=fp8_e4m3,target=sm_80", "dtype=fp8_e4m3"},
    {"Fp8OnHost", Input::Spec, "dtype=fp8_e5m2,target=host", "dtype=fp8_e5m2"},
    {"Fp8OnGfx90a", Input::Spec, "dtype=fp8_e4m3,target=gfx90a",
     "dtype=fp8_e4m3"},
    {"Fp8OnGfx1100", Input::Spec, "dtype=fp8_e5m2,target=gfx1100",
     "dtype=fp8_e5m2"},
    {"Fp8Out", Input::Spec, "dtype=fp8_e4m3,out=fp8_e4m3,target=sm_90a",
     "out=fp8_e4m3"},
    {"OutOtherHalf", Input::Spec, "dtype=bf16,out=fp16", "out=fp16"},
    {"OutNarrower", Input::Spec, "dtype=fp32,out=bf16", "out=bf16"},
    // Validation: head dims.
    {"HeadDim72", Input::Spec, "d=72", "d=72"},
    {"HeadDimZero", Input::Spec, "d=0", "d=0"},
    {"HeadDimV", Input::Spec, "d=128,dv=72", "dv=72"},
    // Validation: pipelines per target.
    {"WgmmaOnSm80", Input::Spec, "pipeline=wgmma,target=sm_80",
     "pipeline=wgmma"},
    {"WgmmaOnSm100a", Input::Spec, "pipeline=wgmma,target=sm_100a",
     "pipeline=wgmma"},
    {"WgmmaOnGfx942", Input::Spec, "pipeline=wgmma,target=gfx942",
     "pipeline=wgmma"},
    {"MfmaOnSm90a", Input::Spec, "pipeline=mfma,target=sm_90a",
     "pipeline=mfma"},
    {"MfmaOnGfx1100", Input::Spec, "pipeline=mfma,target=gfx1100",
     "pipeline=mfma"},
    {"MfmaOnGfx1201", Input::Spec, "pipeline=mfma,target=gfx1201",
     "pipeline=mfma"},
    {"WmmaOnGfx942", Input::Spec, "pipeline=wmma,target=gfx942",
     "pipeline=wmma"},
    {"WmmaOnSm90a", Input::Spec, "pipeline=wmma,target=sm_90a",
     "pipeline=wmma"},
    {"VectorOnSm90a", Input::Spec, "pipeline=vector,target=sm_90a",
     "pipeline=vector"},
    {"VectorOnGfx950", Input::Spec, "pipeline=vector,target=gfx950",
     "pipeline=vector"},
    {"SimtOnHost", Input::Spec, "pipeline=simt,target=host", "pipeline=simt"},
    {"MmaOnX86", Input::Spec, "pipeline=mma,target=x86-64-v4", "pipeline=mma"},
    {"MmaTakesNoFp32", Input::Spec, "dtype=fp32,pipeline=mma,target=sm_90a",
     "pipeline=mma"},
    {"WmmaNoFp8OnGfx1100", Input::Spec,
     "dtype=fp8_e4m3,pipeline=wmma,target=gfx1100", "dtype=fp8_e4m3"},
    // fp8 on sm_90a runs only on wgmma's TMA ring (WgmmaLayout::checkFp8),
    // 32 keys a step.
    {"Fp8OnMmaSm90a", Input::Spec, "dtype=fp8_e4m3,pipeline=mma,target=sm_90a",
     "pipeline=mma"},
    {"Fp8WgmmaStages1", Input::Spec,
     "dtype=fp8_e4m3,pipeline=wgmma,stages=1,target=sm_90a", "stages=1"},
    {"Fp8WgmmaBn80", Input::Spec,
     "dtype=fp8_e4m3,d=256,bn=80,pipeline=wgmma,target=sm_90a", "bn=80"},
    // V^T's pass lays out equal-length sequences; varlen has the ring
    // without it.
    {"PretransposeVarlen", Input::Spec,
     "dtype=fp8_e4m3,varlen=1,v_pretranspose=1,pipeline=wgmma,target=sm_90a",
     "v_pretranspose=1: V^T's pass lays out sequences of one length"},
    // v_pretranspose: fp8 forward on the TMA ring only.
    {"PretransposeBf16", Input::Spec,
     "dtype=bf16,v_pretranspose=1,pipeline=wgmma,target=sm_90a",
     "v_pretranspose=1: only fp8 kernels read V^T"},
    {"PretransposeStages1", Input::Spec,
     "dtype=fp8_e4m3,v_pretranspose=1,pipeline=wgmma,stages=1,target=sm_90a",
     "stages=1"},
    {"PretransposeSplitKv", Input::Spec,
     "family=fwd_splitkv,dtype=fp8_e4m3,v_pretranspose=1,target=sm_90a",
     "v_pretranspose=1: only family fwd takes it"},
    {"PretransposeOnHost", Input::Spec, "v_pretranspose=1,target=host",
     "v_pretranspose=1: only pipeline wgmma reads V^T by TMA"},
    // Validation: features per family.
    {"DropoutInSplitKv", Input::Spec, "family=fwd_splitkv,dropout=1",
     "dropout=1"},
    {"MaskInCombine", Input::Spec, "family=splitkv_combine,mask=causal",
     "mask=causal"},
    {"LseInBackward", Input::Spec, "family=bwd_dq_dk_dv,lse=1", "lse=1"},
    {"SoftcapInAppendKv", Input::Spec, "family=append_kv,softcap=1",
     "softcap=1"},
    {"VarlenInPaged", Input::Spec, "family=fwd_paged,varlen=1", "varlen=1"},
    {"BiasInConvertDq", Input::Spec, "family=bwd_convert_dq,bias=alibi",
     "bias=alibi"},
    {"SinkInDotDoO", Input::Spec, "family=bwd_dot_do_o,sink=1", "sink=1"},
    // The combine folds part 0's partials, which hold the sink already.
    {"SinkInCombine", Input::Spec, "family=splitkv_combine,sink=1",
     "sink=1: family splitkv_combine does not take it"},
    {"SinkNotAFlag", Input::Spec, "sink=2", "sink=2"},
    {"PackGqaInCombine", Input::Spec, "family=splitkv_combine,pack_gqa=1",
     "pack_gqa=1: family splitkv_combine does not take it"},
    {"PackGqaInBackward", Input::Spec, "family=bwd_dq_dk_dv,pack_gqa=1",
     "pack_gqa=1: family bwd_dq_dk_dv does not take it"},
    {"PackGqaInAppendKv", Input::Spec, "family=append_kv,pack_gqa=1",
     "pack_gqa=1"},
    {"PackGqaNotAFlag", Input::Spec, "pack_gqa=2", "pack_gqa=2"},
    {"Fp8Backward", Input::Spec,
     "family=bwd_dq_dk_dv,dtype=fp8_e4m3,target=sm_90a", "dtype=fp8_e4m3"},
    // Validation: tiles.
    {"TileTooSmall", Input::Spec, "bm=8", "bm=8"},
    {"TileTooLarge", Input::Spec, "bn=512", "bn=512"},
    {"TileNotMultiple", Input::Spec, "bm=48,pipeline=mfma,target=gfx942",
     "bm=48"},
    {"WgmmaTileMultiple", Input::Spec, "bm=96,pipeline=wgmma,target=sm_90a",
     "bm=96"},
    {"WarpsNotPowerOfTwo", Input::Spec, "warps=3,target=sm_90a", "warps=3"},
    {"TooManyWarps", Input::Spec, "warps=32,target=sm_90a", "warps=32"},
    {"HostWarps", Input::Spec, "warps=2,target=host", "warps=2"},
    {"TooManyStages", Input::Spec, "stages=5,target=sm_90a", "stages=5"},
    {"HostStages", Input::Spec, "stages=2,target=host", "stages=2"},
    {"SharedMemorySm86", Input::Spec,
     "d=256,bm=128,bn=128,stages=4,pipeline=mma,target=sm_86", "bm=128"},
    {"LdsGfx942", Input::Spec, "d=128,bm=256,bn=256,stages=2,target=gfx942",
     "bm=256"},
    {"HostTileBudget", Input::Spec, "d=256,bm=256,bn=256,target=host",
     "bm=256"},
    {"MmaMTilesPerWarp", Input::Spec,
     "d=32,bm=256,bn=16,warps=1,pipeline=mma,target=sm_80",
     "bm=256: pipeline mma gives each warp at most 8 16-row tiles"},
    {"WgmmaWarpgroups", Input::Spec, "pipeline=wgmma,warps=2,target=sm_90a",
     "warps=2"},
    // The GPU backward's warps own 16 keys each and split a query row's keys
    // among them where bm < bn (BackwardMmaLayout.h).
    {"BackwardBmAboveBn", Input::Spec,
     "family=bwd_dq_dk_dv,bm=128,bn=64,warps=4,target=sm_90a",
     "bm=128: the backward on pipeline mma gives each warp 16 query rows"},
    {"BackwardKeysPerWarp", Input::Spec,
     "family=bwd_dq_dk_dv,bm=64,bn=64,warps=8,target=sm_90a",
     "bn=64: the backward on pipeline mma gives each warp whole 16-row tiles "
     "of keys: use a multiple of 128"},
    {"BackwardDqColumnsPerWarp", Input::Spec,
     "family=bwd_dq_dk_dv,d=80,bm=64,bn=128,warps=8,target=sm_90a",
     "d=80: the backward on pipeline mma splits dQ's columns among 2 warps"},
    // Regression: such tiles validated, spilled ~700 accumulators a lane and
    // took LLVM minutes to compile (found by the compile fuzz).
    {"MfmaAccumulatorsPerLane", Input::Spec,
     "d=128,bm=192,bn=160,warps=1,pipeline=mfma,target=gfx942",
     "bm=192: pipeline mfma keeps S and O in registers: bm=192,bn=160,warps=1 "
     "needs 864 a lane, at most 256 fit"},
    {"WmmaAccumulatorsPerLane", Input::Spec,
     "d=128,bm=128,bn=256,warps=1,pipeline=wmma,target=gfx1100",
     "needs 1536 a lane, at most 256 fit"},
    // JSON specs.
    {"JsonTruncated", Input::Spec, "{\"d\": 64", "JSON"},
    {"JsonTrailingText", Input::Spec, "{\"d\": 64} d=64", "JSON"},
    {"JsonArray", Input::Spec, "[{\"d\": 64}]", "JSON spec must be an object"},
    {"JsonUnknownKey", Input::Spec, "{\"dtyp\": \"bf16\"}",
     "unknown key 'dtyp'"},
    {"JsonDuplicateKey", Input::Spec, "{\"d\": 64, \"d\": 128}",
     "key 'd' is given twice"},
    {"JsonEscapedDuplicate", Input::Spec, "{\"d\": 64, \"\\u0064\": 64}",
     "key 'd' is given twice"},
    {"JsonArrayValue", Input::Spec, "{\"d\": [64]}", "key 'd'"},
    {"JsonNullValue", Input::Spec, "{\"mask\": null}", "key 'mask'"},
    {"JsonFraction", Input::Spec, "{\"bm\": 64.5}", "key 'bm'"},
    {"JsonNumberFamily", Input::Spec, "{\"family\": 3}", "family=3"},
    {"JsonBoolHeadDim", Input::Spec, "{\"d\": true}", "d=1"},
    {"JsonDeepNesting", Input::Spec, "{\"d\": " + std::string(100000, '['),
     "nests too deeply"},
    {"JsonFp8OnSm80", Input::Spec,
     "{\"dtype\": \"fp8_e5m2\", \"target\": \"sm_80\"}", "dtype=fp8_e5m2"},
    // Names: malformed or truncated.
    {"NameEmpty", Input::Name, "", "name"},
    {"NameGarbage", Input::Name, "hello", "a name starts with 'fmha_'"},
    {"NameUpperCase", Input::Name, "FMHA_fwd_bf16_d128_m64n64w1s1_vector_host",
     "fmha_"},
    {"NameDash", Input::Name, "fmha-fwd-bf16", "C identifier"},
    {"NameSpace", Input::Name, "fmha_fwd bf16", "C identifier"},
    {"NameTooLong", Input::Name, kLongName, "200 characters"},
    {"NameDoubleUnderscore", Input::Name,
     "fmha__fwd_bf16_d128_m64n64w1s1_vector_host", "family"},
    {"NameOnlyPrefix", Input::Name, "fmha", "family"},
    {"NameNoDType", Input::Name, "fmha_fwd", "dtype"},
    {"NameNoHeadDim", Input::Name, "fmha_fwd_bf16", "d:"},
    {"NameNoTile", Input::Name, "fmha_fwd_bf16_d128", "bm"},
    {"NameNoPipeline", Input::Name, "fmha_fwd_bf16_d128_m64n64w1s1",
     "pipeline"},
    {"NameNoTarget", Input::Name, "fmha_fwd_bf16_d128_m64n64w1s1_vector",
     "target"},
    {"NameTileNoStages", Input::Name, "fmha_fwd_bf16_d128_m64n64w1_vector_host",
     "stages"},
    {"NameTileTrailing", Input::Name,
     "fmha_fwd_bf16_d128_m64n64w1s1x_vector_host", "trailing 'x'"},
    {"NameTileTooManyDigits", Input::Name,
     "fmha_fwd_bf16_d128_m000064n64w1s1_vector_host", "bm"},
    {"NameUnknownFamily", Input::Name,
     "fmha_fwdx_bf16_d128_m64n64w1s1_vector_host", "family"},
    {"NameUnknownDType", Input::Name,
     "fmha_fwd_bf17_d128_m64n64w1s1_vector_host", "dtype"},
    {"NameUnknownOut", Input::Name,
     "fmha_fwd_bf16ofp64_d128_m64n64w1s1_vector_host", "out"},
    {"NameBadHeadDim", Input::Name, "fmha_fwd_bf16_dx_m64n64w1s1_vector_host",
     "d:"},
    {"NameBadHeadDimV", Input::Name,
     "fmha_fwd_bf16_d128v_m64n64w1s1_vector_host", "dv"},
    {"NameAutoPipeline", Input::Name, "fmha_fwd_bf16_d128_m64n64w1s1_auto_host",
     "pipeline"},
    {"NameUnknownTarget", Input::Name,
     "fmha_fwd_bf16_d128_m64n64w1s1_vector_sm70", "target"},
    {"NameTargetWithUnderscore", Input::Name,
     "fmha_fwd_bf16_d128_m128n64w4s2_mma_sm_90a", "target"},
    {"NameExtraField", Input::Name,
     "fmha_fwd_bf16_d128_m64n64w1s1_vector_host_x", "target"},
    {"NameFlagsOutOfOrder", Input::Name,
     "fmha_fwd_bf16_d128_lse_sc_m64n64w1s1_vector_host", "'sc'"},
    {"NamePackGqaBeforeVarlen", Input::Name,
     "fmha_fwd_bf16_d128_pgqa_vl_m64n64w1s1_vector_host", "found 'vl'"},
    {"NamePackGqaTwice", Input::Name,
     "fmha_fwd_bf16_d128_pgqa_pgqa_m64n64w1s1_vector_host", "'pgqa'"},
    {"NameNoMaskWritten", Input::Name,
     "fmha_fwd_bf16_d128_nomask_m64n64w1s1_vector_host", "'nomask'"},
    // Names: well formed but not canonical.
    {"NameDefaultOutWritten", Input::Name,
     "fmha_fwd_bf16obf16_d128_m64n64w1s1_vector_host", "not canonical"},
    {"NameDefaultDvWritten", Input::Name,
     "fmha_fwd_bf16_d128v128_m64n64w1s1_vector_host", "not canonical"},
    {"NameLeadingZero", Input::Name,
     "fmha_fwd_bf16_d0128_m64n64w1s1_vector_host", "not canonical"},
    {"NameZeroTile", Input::Name, "fmha_fwd_bf16_d128_m0n0w0s0_vector_host",
     "not canonical"},
    // Names: canonical in form, invalid as specs.
    {"NameHeadDim72", Input::Name, "fmha_fwd_bf16_d72_m64n64w1s1_vector_host",
     "d=72"},
    {"NameWgmmaOnSm80", Input::Name,
     "fmha_fwd_bf16_d128_m128n128w8s2_wgmma_sm80", "pipeline=wgmma"},
    {"NameFp8OnSm80", Input::Name, "fmha_fwd_e4m3_d128_m128n64w4s2_mma_sm80",
     "dtype=fp8_e4m3"},
    {"NameDropoutInSplitKv", Input::Name,
     "fmha_fwdsplitkv_bf16_d128_do_m64n64w1s1_vector_host", "dropout=1"},
    {"NamePackGqaInCombine", Input::Name,
     "fmha_splitkvcombine_bf16_d128_pgqa_m64n64w1s1_vector_host", "pack_gqa=1"},
    {"NameTileTooBig", Input::Name,
     "fmha_fwd_bf16_d256_m256n256w4s2_mfma_gfx942", "bm=256"},
};

class Rejects : public ::testing::TestWithParam<Rejection> {};

TEST_P(Rejects, NamingTheKey) {
  const Rejection &r = GetParam();
  llvm::Expected<KernelSpec> result =
      r.kind == Input::Spec ? resolveText(r.text) : decodeName(r.text);
  ASSERT_FALSE(bool(result)) << escapeBytes(r.text) << " was accepted as "
                             << ::testing::PrintToString(*result);
  std::vector<std::string> problems = specProblems(result.takeError(), r.text);
  ASSERT_FALSE(problems.empty());
  bool mentioned = llvm::any_of(problems, [&](const std::string &m) {
    return llvm::StringRef(m).contains(r.mentions);
  });
  EXPECT_TRUE(mentioned) << escapeBytes(r.text) << ": no message mentions '"
                         << r.mentions << "':\n  "
                         << escapeBytes(llvm::join(problems, "\n  "));
}

INSTANTIATE_TEST_SUITE_P(Table, Rejects, ::testing::ValuesIn(kRejections),
                         [](const auto &info) {
                           return std::string(info.param.label);
                         });

// Validation reports every violated rule at once, not just the first.
TEST(RejectsAll, EveryProblemAtOnce) {
  llvm::Expected<KernelSpec> spec = resolveText(
      "family=fwd,dtype=fp8_e4m3,d=72,pipeline=wgmma,target=gfx1100");
  ASSERT_FALSE(bool(spec));
  std::string text =
      "family=fwd,dtype=fp8_e4m3,d=72,pipeline=wgmma,target=gfx1100";
  std::vector<std::string> problems = specProblems(spec.takeError(), text);
  ASSERT_EQ(problems.size(), 3u) << llvm::join(problems, "\n");
  EXPECT_TRUE(llvm::StringRef(problems[0]).starts_with("dtype=fp8_e4m3: "));
  EXPECT_TRUE(llvm::StringRef(problems[1]).starts_with("d=72: "));
  EXPECT_TRUE(llvm::StringRef(problems[2]).starts_with("pipeline=wgmma: "));
}

// A parse error per bad key, all in one go.
TEST(RejectsAll, EveryBadKeyAtOnce) {
  std::string text = "d=x,mask=y,colour=z,lse=2";
  llvm::Expected<KernelSpec> spec = resolveText(text);
  ASSERT_FALSE(bool(spec));
  EXPECT_EQ(specProblems(spec.takeError(), text).size(), 4u);
}

// Messages say what to use instead.
TEST(RejectsAll, MessagesListTheAllowedValues) {
  std::string text = "d=72,target=gfx942";
  llvm::Expected<KernelSpec> spec = resolveText(text);
  ASSERT_FALSE(bool(spec));
  std::vector<std::string> problems = specProblems(spec.takeError(), text);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "d=72: head dim 72 is not supported on gfx942; use 32, "
            "64, 80, 96, 128, 160, 192, 256");
}

} // namespace
