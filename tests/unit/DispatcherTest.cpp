//===- DispatcherTest.cpp - The dispatcher's rules, as tables -------------===//
//
// Each row is a problem (the feature part as spec text, the longest query
// and key lengths, an optional stored autotune winner) and what the
// dispatcher must do with it: the kernel it picks and words each rule's
// outcome must contain. The rules are documented in runtime/api/Dispatcher.h
// and docs/api.md; the tile buckets are data in specs/dispatch/*.json.
//
//===----------------------------------------------------------------------===//
#include "runtime/api/Dispatcher.h"
#include "runtime/api/Registry.h"
#include "specs/EncodedName.h"
#include "specs/SpecParser.h"
#include "gtest/gtest.h"
#include <map>
#include <optional>

using namespace fmhajit;

namespace {

struct DispatchCase {
  std::string label;
  std::string features; ///< spec text without pipeline or tile
  int64_t seqlenQ, seqlenK;
  std::string expected; ///< the chosen kernel's encoded name
  /// rule ("1 features", "2 tiles", ...) -> words its outcome contains
  std::map<std::string, std::string> reasons;
  std::optional<std::string> tunedWinner = std::nullopt;
  bool decodeShaped = false;
  unsigned kvRowAlignment = 16; ///< of the problem's K/V layout
  int64_t gqaRatio = 1;         ///< query heads per K/V head
  int log2PageSize = -1;        ///< paged K/V: log2 rows per page
};

void PrintTo(const DispatchCase &c, std::ostream *os) { *os << c.label; }

class Dispatcher : public ::testing::TestWithParam<DispatchCase> {};

TEST_P(Dispatcher, PicksTheDocumentedKernel) {
  const DispatchCase &c = GetParam();
  llvm::Expected<KernelSpec> features = parseSpec(c.features);
  ASSERT_TRUE(bool(features)) << llvm::toString(features.takeError());
  llvm::Expected<const Registry &> registry =
      Registry::forTarget(features->target);
  ASSERT_TRUE(bool(registry)) << llvm::toString(registry.takeError());
  DispatchQuery query{*features,     c.seqlenQ,        c.seqlenK,
                      c.tunedWinner, c.kvRowAlignment, c.gqaRatio};
  query.log2PageSize = c.log2PageSize;
  llvm::Expected<Dispatch> d =
      dispatch(query, *registry, DispatchTable::forTarget(features->target));
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(encodeName(d->chosen), c.expected);
  EXPECT_EQ(d->decodeShaped, c.decodeShaped);
  std::string trace;
  for (const RuleOutcome &r : d->rules)
    trace += r.rule + ": " + r.outcome + "\n";
  for (const auto &reason : c.reasons) {
    const auto &rule = reason.first;
    const auto &words = reason.second;
    auto it =
        std::find_if(d->rules.begin(), d->rules.end(),
                     [&](const RuleOutcome &r) { return r.rule == rule; });
    ASSERT_NE(it, d->rules.end()) << "no outcome for rule " << rule << "\n"
                                  << trace;
    EXPECT_NE(it->outcome.find(words), std::string::npos)
        << "rule " << rule << " should say '" << words << "'\n"
        << trace;
  }
}

std::string caseName(const ::testing::TestParamInfo<DispatchCase> &info) {
  return info.param.label;
}

const char *const kHostBf16 =
    "family=fwd,dtype=bf16,d=128,mask=causal,target=host";

// Rule 2 on the host: bm follows the query length (16, 32, then 64).
INSTANTIATE_TEST_SUITE_P(
    HostTiles, Dispatcher,
    ::testing::Values(
        DispatchCase{
            "Decode",
            kHostBf16,
            1,
            4096,
            "fmha_fwd_bf16_d128_causal_m16n64w1s1_vector_host",
            {{"1 features", "of the registry"},
             {"2 tiles", "vector m16n64w1s1 (seqlen_q <= 16, d <= 256"},
             {"3 priority", "first of 1"},
             {"decode", "decode-shaped"}},
            std::nullopt,
            true},
        DispatchCase{"ShortPrefill",
                     kHostBf16,
                     32,
                     32,
                     "fmha_fwd_bf16_d128_causal_m32n64w1s1_vector_host",
                     {{"2 tiles", "m32n64w1s1 (seqlen_q <= 32"},
                      {"decode", "not decode-shaped"}}},
        DispatchCase{"Prefill",
                     kHostBf16,
                     2048,
                     2048,
                     "fmha_fwd_bf16_d128_causal_m64n64w1s1_vector_host",
                     {{"2 tiles", "m64n64w1s1 (any seqlen_q"}}},
        DispatchCase{"ShortQueryShortKeys",
                     kHostBf16,
                     8,
                     64,
                     "fmha_fwd_bf16_d128_causal_m16n64w1s1_vector_host",
                     {{"decode", "seqlen_k 64 < 1024: not decode-shaped"}}},
        DispatchCase{"Fp32Lse",
                     "family=fwd,dtype=fp32,d=64,mask=window,lse=1,target=host",
                     100,
                     100,
                     "fmha_fwd_fp32_d64_window_lse_m64n64w1s1_vector_host",
                     {{"1 features", "of the registry"}}},
        DispatchCase{"X86V4",
                     "family=fwd,dtype=fp16,d=64,target=x86-64-v4",
                     16,
                     16,
                     "fmha_fwd_fp16_d64_m16n64w1s1_vector_x8664v4",
                     {{"2 tiles", "dispatch/host.json"}}}),
    caseName);

// Rule 1: features no profile lists are made on the spot, in the table's
// tile; rule 1 never mixes features.
INSTANTIATE_TEST_SUITE_P(
    Features, Dispatcher,
    ::testing::Values(
        DispatchCase{
            "NotInRegistry",
            "family=fwd,dtype=fp32,d=80,bias=alibi,softcap=1,target=host",
            1,
            8,
            "fmha_fwd_fp32_d80_alibi_sc_m16n64w1s1_vector_host",
            {{"1 features", "no registry kernel matches"}}},
        DispatchCase{
            "VarlenStaysVarlen",
            "family=fwd,dtype=bf16,d=64,mask=causal,varlen=1,target=host",
            300,
            300,
            "fmha_fwd_bf16_d64_causal_vl_m64n64w1s1_vector_host",
            {{"1 features", "varlen"}}},
        DispatchCase{"OutDtype",
                     "family=fwd,dtype=bf16,out=fp32,d=64,target=host",
                     64,
                     64,
                     "fmha_fwd_bf16ofp32_d64_m64n64w1s1_vector_host",
                     {{"1 features", "made for it"}}}),
    caseName);

// NVIDIA: wgmma first on sm_90a (auto_order), a half-height tile for short
// queries;
// fp32 only has simt; AMD keeps the arch defaults.
INSTANTIATE_TEST_SUITE_P(
    Gpus, Dispatcher,
    ::testing::Values(
        DispatchCase{"Sm90aPrefill",
                     "family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a",
                     4096,
                     4096,
                     "fmha_fwd_bf16_d128_causal_m128n128w8s2_wgmma_sm90a",
                     {{"2 tiles", "wgmma m128n128w8s2"},
                      {"3 priority", "(wgmma > mma > simt)"}}},
        // The TMA ring (stages=2) reads varlen's packed rows too: the
        // same first row as a dense prefill.
        DispatchCase{"Sm90aVarlenOnTheRing",
                     "family=fwd,dtype=bf16,d=128,mask=causal,varlen=1,"
                     "target=sm_90a",
                     4096,
                     4096,
                     "fmha_fwd_bf16_d128_causal_vl_m128n128w8s2_wgmma_sm90a",
                     {{"2 tiles", "wgmma m128n128w8s2"}}},
        DispatchCase{"Sm90aShort",
                     "family=fwd,dtype=bf16,d=128,target=sm_90a",
                     48,
                     48,
                     "fmha_fwd_bf16_d128_m64n128w4s1_wgmma_sm90a",
                     {{"2 tiles", "wgmma m64n128w4s1 (seqlen_q <= 64"}}},
        DispatchCase{"Sm80D256",
                     "family=fwd,dtype=fp16,d=256,target=sm_80",
                     512,
                     512,
                     "fmha_fwd_fp16_d256_m64n16w4s1_mma_sm80",
                     {{"2 tiles", "d <= 256"}}},
        DispatchCase{"Sm80Fp32IsSimt",
                     "family=fwd,dtype=fp32,d=64,target=sm_80",
                     16,
                     16,
                     "fmha_fwd_fp32_d64_m32n32w4s1_simt_sm80",
                     {{"2 tiles", "simt m32n32w4s1 (seqlen_q <= 32"}}},
        DispatchCase{
            "Sm90aMisalignedKvIsSimt",
            "family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a",
            4096,
            4096,
            "fmha_fwd_bf16_d128_causal_m64n32w4s1_simt_sm90a",
            {{"1 layout",
              "only 2-byte aligned: dropped 4 candidates of pipelines mma and "
              "wgmma"}},
            std::nullopt,
            false,
            2},
        DispatchCase{"Gfx942Defaults",
                     "family=fwd,dtype=bf16,d=128,target=gfx942",
                     16,
                     16,
                     "fmha_fwd_bf16_d128_m128n64w4s1_mfma_gfx942",
                     {{"2 tiles", "the arch default"}}}),
    caseName);

// fp8 on sm_90a: only wgmma's TMA ring takes it. d=256 has a row of its
// own (bn=96: fp8 multiplies 32 keys at a time, so bf16's bn=80 does not
// suit it), with V^T from the pass from 4096 queries. Where the table's tile
// does not suit the V transposers (the stages=1 decode row) every candidate
// stays and the nearest valid one wins; a GQA decode stays unpacked, since no
// fp8 kernel reads packed rows.
INSTANTIATE_TEST_SUITE_P(
    Fp8, Dispatcher,
    ::testing::Values(
        DispatchCase{
            "D256",
            "family=fwd,dtype=fp8_e4m3,d=256,target=sm_90a",
            4096,
            4096,
            "fmha_fwd_e4m3_d256_vpt_m128n96w8s2_wgmma_sm90a",
            {{"2 tiles", "wgmma vpt_m128n96w8s2 (any seqlen_q, d <= 256"}}},
        DispatchCase{
            "D256Short",
            "family=fwd,dtype=fp8_e4m3,d=256,target=sm_90a",
            2048,
            2048,
            "fmha_fwd_e4m3_d256_m128n96w8s2_wgmma_sm90a",
            {{"2 tiles", "wgmma m128n96w8s2 (seqlen_q <= 2048, d <= 256"}}},
        DispatchCase{"GqaDecodeUnpacked",
                     "family=fwd,dtype=fp8_e4m3,d=128,target=sm_90a",
                     1,
                     8192,
                     "fmha_fwd_e4m3_d128_m128n128w8s2_wgmma_sm90a",
                     {{"0 pack", "no kernel packs these features"}},
                     std::nullopt,
                     true,
                     16,
                     8}),
    caseName);

// A stored autotune winner replaces rule 3's pick while it is a rule-1
// candidate, and is ignored once it is not.
INSTANTIATE_TEST_SUITE_P(
    Autotune, Dispatcher,
    ::testing::Values(
        DispatchCase{"StoredWinner",
                     kHostBf16,
                     1,
                     4096,
                     "fmha_fwd_bf16_d128_causal_m64n64w1s1_vector_host",
                     {{"autotune", "replaces rule 3's pick"}},
                     "fmha_fwd_bf16_d128_causal_m64n64w1s1_vector_host",
                     true},
        DispatchCase{"WinnerAgrees",
                     kHostBf16,
                     2048,
                     2048,
                     "fmha_fwd_bf16_d128_causal_m64n64w1s1_vector_host",
                     {{"autotune", "agrees with rule 3"}},
                     "fmha_fwd_bf16_d128_causal_m64n64w1s1_vector_host"},
        DispatchCase{"StaleWinner",
                     kHostBf16,
                     1,
                     4096,
                     "fmha_fwd_bf16_d128_causal_m16n64w1s1_vector_host",
                     {{"autotune", "no longer a candidate; ignored"}},
                     "fmha_fwd_bf16_d128_m64n64w1s1_vector_host",
                     true}),
    caseName);

// Rule 0: decode-shaped GQA problems (specs/dispatch/*.json "pack_gqa":
// seqlen_q <= 16, ratio >= 2) get pack_gqa kernels from the registry (the
// decode profile), tiled by their packed rows; others one head per tile.
const char *const kHostDecode =
    "family=fwd,dtype=bf16,d=128,mask=causal_br,target=host";
const char *const kSm90Paged =
    "family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,target=sm_90a";
INSTANTIATE_TEST_SUITE_P(
    PackGqa, Dispatcher,
    ::testing::Values(
        DispatchCase{"HostGroupOf8",
                     kHostDecode,
                     1,
                     4096,
                     "fmha_fwd_bf16_d128_causalbr_pgqa_m16n64w1s1_vector_host",
                     {{"0 pack", "8 >= 2, seqlen_q 1 <= 16: pack_gqa"},
                      {"1 features", "of the registry"},
                      {"2 tiles", "packed rows 8"}},
                     std::nullopt,
                     true,
                     16,
                     8},
        DispatchCase{"HostFourTokensGroupOf8",
                     kHostDecode,
                     4,
                     4096,
                     "fmha_fwd_bf16_d128_causalbr_pgqa_m32n64w1s1_vector_host",
                     {{"2 tiles", "packed rows 32"}},
                     std::nullopt,
                     true,
                     16,
                     8},
        DispatchCase{"HostNoGroups",
                     kHostDecode,
                     1,
                     4096,
                     "fmha_fwd_bf16_d128_causalbr_m16n64w1s1_vector_host",
                     {{"0 pack", "1 < 2, seqlen_q 1 <= 16: one query head"}},
                     std::nullopt,
                     true,
                     16,
                     1},
        DispatchCase{"HostPrefill",
                     kHostDecode,
                     64,
                     4096,
                     "fmha_fwd_bf16_d128_causalbr_m64n64w1s1_vector_host",
                     {{"0 pack", "seqlen_q 64 > 16: one query head"}},
                     std::nullopt,
                     false,
                     16,
                     8},
        DispatchCase{
            "Sm90PagedGroupOf4",
            kSm90Paged,
            2,
            8192,
            "fmha_fwdpaged_bf16_d128_causalbr_lse_pgqa_m64n128w4s1_wgmma_sm90a",
            {{"0 pack", "pack_gqa"}, {"2 tiles", "packed rows 8"}},
            std::nullopt,
            true,
            16,
            4,
            4}),
    caseName);

// Paged prefill on sm_90a takes the table's TMA ring tile, whose boxes hold
// at least 8 rows of a page; smaller pages drop it for the stages=1 twin.
// Decode keeps its cp.async row.
const char *const kSm90PagedPrefill =
    "family=fwd_paged,dtype=bf16,d=128,target=sm_90a";
INSTANTIATE_TEST_SUITE_P(
    PagedRing, Dispatcher,
    ::testing::Values(
        DispatchCase{"Sm90PagesOf16",
                     kSm90PagedPrefill,
                     1024,
                     4096,
                     "fmha_fwdpaged_bf16_d128_m128n128w8s2_wgmma_sm90a",
                     {{"2 tiles", "wgmma m128n128w8s2"}},
                     std::nullopt,
                     false,
                     16,
                     1,
                     4},
        DispatchCase{"Sm90PagesOf8Longer",
                     kSm90PagedPrefill,
                     4096,
                     4096,
                     "fmha_fwdpaged_bf16_d128_m128n160w8s2_wgmma_sm90a",
                     {{"2 tiles", "wgmma m128n160w8s2"}},
                     std::nullopt,
                     false,
                     16,
                     1,
                     3},
        DispatchCase{"Sm90PagesOf4",
                     kSm90PagedPrefill,
                     1024,
                     4096,
                     "fmha_fwdpaged_bf16_d128_m128n128w8s1_wgmma_sm90a",
                     {{"1 pages", "pages of 4 rows: dropped 2 candidates"},
                      {"2 tiles", "no candidate has it"}},
                     std::nullopt,
                     false,
                     16,
                     1,
                     2},
        DispatchCase{"Sm90PagedDecode",
                     kSm90PagedPrefill,
                     1,
                     4096,
                     "fmha_fwdpaged_bf16_d128_m64n128w4s1_wgmma_sm90a",
                     {{"2 tiles", "wgmma m64n128w4s1"}},
                     std::nullopt,
                     true,
                     16,
                     1,
                     4}),
    caseName);

// fp8 has only the TMA ring, whose paged kernels need pages of 8 rows or
// more: smaller pages get the reason, not "no kernel computes it".
TEST(Dispatcher, Fp8PagesUnderEightRowsAreAUsageError) {
  llvm::Expected<KernelSpec> features =
      parseSpec("family=fwd_paged,dtype=fp8_e4m3,d=128,target=sm_90a");
  ASSERT_TRUE(bool(features)) << llvm::toString(features.takeError());
  llvm::Expected<const Registry &> registry = Registry::forTarget("sm_90a");
  ASSERT_TRUE(bool(registry)) << llvm::toString(registry.takeError());
  DispatchQuery query{*features, 1024, 4096, std::nullopt, 16, 1};
  query.log2PageSize = 2;
  llvm::Expected<Dispatch> d =
      dispatch(query, *registry, DispatchTable::forTarget("sm_90a"));
  ASSERT_FALSE(bool(d));
  std::string message = llvm::toString(d.takeError());
  EXPECT_NE(message.find("but the pages have 4: use pages of at least 8 rows"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("stages=1"), std::string::npos) << message;
  query.log2PageSize = 4;
  d = dispatch(query, *registry, DispatchTable::forTarget("sm_90a"));
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(d->chosen.stages, 2u);
}

TEST(Dispatcher, UnknownTargetIsAnError) {
  KernelSpec features;
  features.target = "sm_99";
  llvm::Expected<const Registry &> registry = Registry::forTarget("host");
  ASSERT_TRUE(bool(registry));
  llvm::Expected<Dispatch> d =
      dispatch({features, 1, 1, std::nullopt}, *registry,
               DispatchTable::forTarget("host"));
  ASSERT_FALSE(bool(d));
  EXPECT_NE(llvm::toString(d.takeError()).find("unknown target"),
            std::string::npos);
}

} // namespace
