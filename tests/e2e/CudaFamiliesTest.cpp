//===- CudaFamiliesTest.cpp - The multi-stage families on an NVIDIA GPU ---===//
//
// The host family tests' checks, with the kernels compiled for the GPU's
// target and launched through GpuKernel (grids from workItems(spec,
// params)): split-KV (mma, wgmma and simt pipelines; the combine on the GPU
// too), fwd_paged over shuffled pages with NaN in unused rows, and append_kv
// into a paged cache. Skipped without a CUDA driver and GPU.
//
//===----------------------------------------------------------------------===//
#include "CudaForwardRunner.h"
#include "FamilyHarness.h"
#include "runtime/device/DeviceForwardData.h"
#include "specs/EncodedName.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {
#define SKIP_WITHOUT_GPU(runner)                                               \
  CudaForwardRunner *runner = CudaForwardRunner::shared();                     \
  if (!runner)                                                                 \
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();

/// \p text with the GPU's own target, resolved.
std::optional<KernelSpec> gpuSpec(CudaForwardRunner &runner,
                                  const std::string &text) {
  const std::optional<std::string> &target = runner.driver().device().target;
  if (!target)
    return std::nullopt;
  return resolveSpec(text + ",target=" + *target);
}

struct Workspace {
  GpuBuffer oAccum, lseAccum;
};

llvm::Expected<Workspace> makeWorkspace(CudaDriver &driver,
                                        const KernelSpec &spec,
                                        const AttentionProblem &problem,
                                        unsigned n) {
  SplitKvWorkspaceSize size = splitKvWorkspaceSize(spec, problem, n);
  Workspace w;
  auto o = GpuBuffer::create(driver, 4 * size_t(size.oAccum), "o_accum");
  if (!o)
    return o.takeError();
  auto lse = GpuBuffer::create(driver, 4 * size_t(size.lseAccum), "lse_accum");
  if (!lse)
    return lse.takeError();
  w.oAccum = std::move(*o);
  w.lseAccum = std::move(*lse);
  if (llvm::Error err = w.oAccum.poison(DType::F32))
    return std::move(err);
  if (llvm::Error err = w.lseAccum.poison(DType::F32))
    return std::move(err);
  return std::move(w);
}

/// Launches the split kernel and, with n > 1, the combine; waits.
llvm::Error launchSplit(CudaForwardRunner &runner, const KernelSpec &spec,
                        const KernelArgs &params) {
  auto split = runner.load(spec);
  if (!split)
    return split.takeError();
  auto stream = GpuStream::create(runner.driver());
  if (!stream)
    return stream.takeError();
  if (llvm::Error err = split->launch(params, stream->get()))
    return err;
  if (params.numSplits > 1) {
    auto combineSpec = combineSpecFor(spec);
    if (!combineSpec)
      return combineSpec.takeError();
    auto combine = runner.load(*combineSpec);
    if (!combine)
      return combine.takeError();
    if (llvm::Error err = combine->launch(
            makeCombineParams(*combineSpec, params), stream->get()))
      return err;
  }
  return stream->synchronize();
}

struct GpuSplitCase {
  std::string label, spec;
  Shape shape;
  std::vector<unsigned> splits;
};

class CudaSplitKv : public ::testing::TestWithParam<GpuSplitCase> {};

TEST_P(CudaSplitKv, MatchesReference) {
  SKIP_WITHOUT_GPU(runner);
  const GpuSplitCase &c = GetParam();
  std::optional<KernelSpec> spec = gpuSpec(*runner, c.spec);
  ASSERT_TRUE(spec);
  AttentionProblem problem = makeProblem(*spec, c.shape);
  for (unsigned n : c.splits) {
    SCOPED_TRACE("numSplits " + std::to_string(n));
    auto check = checkForward(
        *spec, problem, 3,
        [&](const KernelSpec &s, const AttentionProblem &p,
            ForwardData &d) -> llvm::Error {
          auto device =
              DeviceForwardData::upload(runner->driver(), s, p, d.buffers());
          if (!device)
            return device.takeError();
          auto workspace = makeWorkspace(runner->driver(), s, p, n);
          if (!workspace)
            return workspace.takeError();
          KernelArgs params = makeSplitKvParams(
              s, p, device->buffers(), n,
              {static_cast<float *>(workspace->oAccum.pointer()),
               static_cast<float *>(workspace->lseAccum.pointer())});
          if (llvm::Error err = launchSplit(*runner, s, params))
            return err;
          return device->download(d.buffers());
        });
    ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
    EXPECT_TRUE(check->compare.pass)
        << encodeName(*spec) << ": " << check->compare.summary();
  }
}

std::vector<GpuSplitCase> gpuSplitCases() {
  return {
      {"mma_decode_gqa8",
       "family=fwd_splitkv,dtype=bf16,d=128,lse=1,pipeline=mma",
       Shape::dense(2, 16, 2, 1, 1000),
       {1, 3, 7}},
      {"mma_causal",
       "family=fwd_splitkv,dtype=fp16,d=64,mask=causal,lse=1,pipeline=mma",
       Shape::dense(1, 4, 2, 130, 200),
       {2, 5}},
      {"simt_causal_br_rows_without_keys",
       "family=fwd_splitkv,dtype=fp16,d=64,mask=causal_br,lse=1,pipeline=simt",
       Shape::dense(1, 2, 1, 70, 30),
       {1, 3}},
      {"mma_varlen",
       "family=fwd_splitkv,dtype=bf16,d=64,varlen=1,lse=1,pipeline=mma",
       Shape::varlen({1, 77, 5}, {200, 5, 333}, 4, 2),
       {4}},
      {"wgmma_decode_gqa8",
       "family=fwd_splitkv,dtype=bf16,d=128,lse=1,pipeline=wgmma",
       Shape::dense(2, 16, 2, 1, 1000),
       {1, 3, 7}},
      {"wgmma_causal_varlen",
       "family=fwd_splitkv,dtype=fp16,d=64,mask=causal,varlen=1,lse=1,"
       "pipeline=wgmma",
       Shape::varlen({1, 77, 130}, {200, 5, 333}, 4, 2),
       {2, 5}},
      // pack_gqa: each group's rows in one tile, partials per packed row.
      {"decode_gqa8_packed",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,bias=alibi,lse=1,"
       "pack_gqa=1",
       Shape::dense(2, 16, 2, 1, 1000),
       {1, 3, 7}},
      {"multi_token_gqa16_packed",
       "family=fwd_splitkv,dtype=fp16,d=256,mask=causal_br,lse=1,pack_gqa=1",
       Shape::dense(1, 32, 2, 4, 777),
       {1, 5}},
      // Issue 13's decode tile: one warp, 16 packed rows. Part counts past
      // the 47 key tiles leave parts with no keys (O = 0, LSE = -inf).
      {"decode_gqa4_packed_one_warp",
       "family=fwd_splitkv,dtype=bf16,d=128,lse=1,pipeline=mma,bm=16,bn=64,"
       "warps=1,pack_gqa=1",
       Shape::dense(2, 32, 8, 1, 3000),
       {1, 5, 47, 128}},
      {"multi_token_gqa4_packed_one_warp",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,lse=1,"
       "pipeline=mma,bm=16,bn=32,warps=1,pack_gqa=1",
       Shape::dense(1, 16, 4, 8, 777),
       {1, 3, 256}},
      {"simt_varlen_gqa4_packed",
       "family=fwd_splitkv,dtype=fp16,d=64,mask=window,varlen=1,lse=1,"
       "pipeline=simt,pack_gqa=1",
       Shape::varlen({1, 8, 3}, {200, 9, 333}, 8, 2).window(50, 0),
       {1, 4}},
      // pack_gqa on wgmma's TMA ring (issue 13): the decode tile m64n128w4
      // with 2 and 3 slots, ratios 2 to 16 at Sq = 1, 2 and 8, part counts
      // up to the key tiles and past them (parts with no keys: their items
      // take no product), softcap with ALiBi, d = 64 and 256 and two
      // consumer warpgroups.
      {"ring_decode_gqa8_packed",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,bias=alibi,lse=1,"
       "pack_gqa=1,pipeline=wgmma,bm=64,bn=128,warps=4,stages=2",
       Shape::dense(2, 16, 2, 1, 1000),
       {1, 3, 7}},
      {"ring_decode_gqa2_packed_parts_past_tiles",
       "family=fwd_splitkv,dtype=bf16,d=128,lse=1,pack_gqa=1,pipeline=wgmma,"
       "bm=64,bn=128,warps=4,stages=2",
       Shape::dense(2, 8, 4, 2, 3000),
       {1, 5, 24, 40}},
      {"ring_gqa4_sq8_packed_three_slots",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,lse=1,pack_gqa=1,"
       "pipeline=wgmma,bm=64,bn=128,warps=4,stages=3",
       Shape::dense(1, 16, 4, 8, 2500),
       {1, 4, 20}},
      {"ring_gqa16_sq8_packed_two_tiles",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,lse=1,pack_gqa=1,"
       "pipeline=wgmma,bm=64,bn=128,warps=4,stages=2",
       Shape::dense(1, 32, 2, 8, 777),
       {1, 5}},
      {"ring_gqa8_sq2_packed_softcap_alibi_d64",
       "family=fwd_splitkv,dtype=fp16,d=64,mask=causal_br,softcap=1,"
       "bias=alibi,lse=1,pack_gqa=1,pipeline=wgmma,bm=64,bn=128,warps=4,"
       "stages=2",
       Shape::dense(1, 16, 2, 2, 1500).softcap(20),
       {1, 3}},
      {"ring_gqa4_packed_d256",
       "family=fwd_splitkv,dtype=bf16,d=256,mask=causal_br,lse=1,pack_gqa=1,"
       "pipeline=wgmma,bm=64,warps=4,stages=2",
       Shape::dense(2, 8, 2, 1, 1200),
       {1, 4}},
      {"ring_gqa16_sq8_packed_two_warpgroups",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,softcap=1,"
       "bias=alibi,lse=1,pack_gqa=1,pipeline=wgmma,bm=128,warps=8,stages=2",
       Shape::dense(1, 32, 2, 8, 1000),
       {1, 3}},
      // Keys as the products' rows (keysAsRows: bm under 64): one 8:1
      // group's token in m8 tiles, parts past the key tiles, two tiles of
      // an item's 32 rows at bm = 16, softcap at d = 64, d = 256 on three
      // slots, and unpacked rows (Q by a TMA box of 8 rows).
      {"keys_as_rows_decode_gqa8",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,bias=alibi,lse=1,"
       "pack_gqa=1,pipeline=wgmma,bm=8,bn=128,warps=4,stages=2",
       Shape::dense(2, 16, 2, 1, 1000),
       {1, 3, 7}},
      {"keys_as_rows_gqa2_parts_past_tiles",
       "family=fwd_splitkv,dtype=bf16,d=128,lse=1,pack_gqa=1,pipeline=wgmma,"
       "bm=8,bn=128,warps=4,stages=2",
       Shape::dense(2, 8, 4, 2, 3000),
       {1, 5, 24, 40}},
      {"keys_as_rows_gqa8_sq4_two_tiles",
       "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,lse=1,pack_gqa=1,"
       "pipeline=wgmma,bm=16,bn=128,warps=4,stages=2",
       Shape::dense(1, 16, 2, 4, 777),
       {1, 5}},
      {"keys_as_rows_gqa4_sq4_softcap_d64",
       "family=fwd_splitkv,dtype=fp16,d=64,mask=causal_br,softcap=1,lse=1,"
       "pack_gqa=1,pipeline=wgmma,bm=16,bn=64,warps=4,stages=2",
       Shape::dense(1, 16, 4, 4, 1500).softcap(20),
       {1, 4}},
      {"keys_as_rows_gqa4_d256_three_slots",
       "family=fwd_splitkv,dtype=bf16,d=256,mask=causal_br,lse=1,pack_gqa=1,"
       "pipeline=wgmma,bm=8,bn=64,warps=4,stages=3",
       Shape::dense(2, 8, 2, 1, 1200),
       {1, 4}},
      {"keys_as_rows_unpacked",
       "family=fwd_splitkv,dtype=bf16,d=128,lse=1,pipeline=wgmma,bm=8,"
       "bn=128,warps=4,stages=2",
       Shape::dense(2, 4, 4, 3, 900),
       {1, 3}}};
}
INSTANTIATE_TEST_SUITE_P(
    Cases, CudaSplitKv, ::testing::ValuesIn(gpuSplitCases()),
    [](const ::testing::TestParamInfo<GpuSplitCase> &info) {
      return testName(info.param.label);
    });

/// A paged case: the spec, the cache's page size and the query tokens of
/// each sequence.
struct GpuPagedCase {
  const char *spec;
  int64_t pageSize = 16, seqlenQ = 2;
};

void PrintTo(const GpuPagedCase &c, std::ostream *os) {
  *os << c.spec << ", pages of " << c.pageSize << ", " << c.seqlenQ
      << " queries";
}

class CudaPaged : public ::testing::TestWithParam<GpuPagedCase> {};

// Sequences of 1 to 1000 keys in shuffled pages, ending mid-page and
// mid-box; the pools' unused rows hold NaN (fillCache), which the TMA
// ring's partial V tiles must not let through.
TEST_P(CudaPaged, ShuffledPagesMatchReference) {
  SKIP_WITHOUT_GPU(runner);
  std::optional<KernelSpec> spec = gpuSpec(*runner, GetParam().spec);
  ASSERT_TRUE(spec);
  AttentionProblem a = AttentionProblem::forSpec(*spec);
  a.headsQ = 16;
  a.headsKv = 2;
  a.seqlenQ = GetParam().seqlenQ;
  if (spec->softcap)
    a.softcap = 20;
  std::vector<int64_t> lens = {1, 17, 300, 64, 1000, 136};
  a.batch = int64_t(lens.size());
  int64_t pageSize = GetParam().pageSize;
  int64_t pagesPerSeq = (1000 + pageSize - 1) / pageSize + 1;
  PagedProblem problem = PagedProblem::make(
      *spec, a,
      KvCacheLayout::paged(pageSize, pagesPerSeq * a.batch, pagesPerSeq), lens);
  if (llvm::Error err = problem.validate(*spec))
    FAIL() << llvm::toString(std::move(err));
  CudaDriver &driver = runner->driver();
  for (unsigned n : {1u, 4u}) {
    PagedData host(*spec, problem, 5);
    GpuBuffer q =
        uploadOrFail(driver, host.q.data(), host.q.sizeInBytes(), "q");
    GpuBuffer k =
        uploadOrFail(driver, host.kPool.data(), host.kPool.sizeInBytes(), "k");
    GpuBuffer v =
        uploadOrFail(driver, host.vPool.data(), host.vPool.sizeInBytes(), "v");
    GpuBuffer o =
        uploadOrFail(driver, host.o.data(), host.o.sizeInBytes(), "o");
    GpuBuffer lse =
        uploadOrFail(driver, host.lse.data(), 4 * host.lse.size(), "lse");
    GpuBuffer table = uploadOrFail(driver, host.blockTable.data(),
                                   4 * host.blockTable.size(), "table");
    GpuBuffer seqlens = uploadOrFail(driver, host.seqlens.data(),
                                     4 * host.seqlens.size(), "lens");
    auto workspace = makeWorkspace(driver, *spec, problem.attention, n);
    ASSERT_TRUE(bool(workspace)) << llvm::toString(workspace.takeError());
    GpuBuffer slopes;
    if (!host.slopes.empty())
      slopes = uploadOrFail(driver, host.slopes.data(), 4 * host.slopes.size(),
                            "alibi slopes");
    ForwardBuffers query{q.pointer(), nullptr, nullptr, o.pointer()};
    query.lse = static_cast<float *>(lse.pointer());
    query.alibiSlopes = static_cast<const float *>(slopes.pointer());
    KernelArgs params =
        makePagedParams(*spec, problem, query,
                        {k.pointer(), v.pointer(),
                         static_cast<const int32_t *>(table.pointer()),
                         static_cast<const int32_t *>(seqlens.pointer())},
                        n,
                        {static_cast<float *>(workspace->oAccum.pointer()),
                         static_cast<float *>(workspace->lseAccum.pointer())});
    if (llvm::Error err = launchSplit(*runner, *spec, params))
      FAIL() << encodeName(*spec) << ": " << llvm::toString(std::move(err));
    ASSERT_FALSE(bool(o.copyTo(host.o.data(), host.o.sizeInBytes())));
    ASSERT_FALSE(bool(lse.copyTo(host.lse.data(), 4 * host.lse.size())));
    ReferenceOutput ref =
        referencePaged(*spec, problem, host.q.toFloat(), host.kPool.toFloat(),
                       host.vPool.toFloat(), host.blockTable);
    CompareResult r =
        compareOutputs(host.o.toFloat(), ref.o, host.lse, ref.lse,
                       toleranceFor(spec->dtype, spec->outType()));
    EXPECT_TRUE(r.pass) << encodeName(*spec) << " with " << n
                        << " parts: " << r.summary();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pipelines, CudaPaged,
    ::testing::Values(
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pipeline=mma"},
        GpuPagedCase{"family=fwd_paged,dtype=fp16,d=64,lse=1,pipeline=simt"},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pipeline=wgmma"},
        GpuPagedCase{"family=fwd_paged,dtype=fp16,d=256,lse=1,pipeline=wgmma"},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,"
                     "softcap=1,lse=1,pack_gqa=1"},
        GpuPagedCase{"family=fwd_paged,dtype=fp16,d=64,lse=1,pipeline=simt,"
                     "pack_gqa=1"},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pipeline=mma,bm=16,bn=64,warps=1,pack_gqa=1"}));

// fwd_paged on wgmma's TMA ring (loadsPagedBoxes): boxes of gcd(page size,
// bn) rows, 8 (16 boxes a tile) to bn; bn = 80 (boxes of 16 rows in pages of
// 16 and 256); decode (2 and 8 queries, pack_gqa) and prefill (300 queries:
// several query tiles); a window, whose tiles start on whole tiles; fp8,
// whose V lands in the transposers' staging tile; the narrowed decode tile's
// ring twin (bn = 64), which the planner runs on paged rows (SplitPlanner.cpp),
// in pages of 16 and 64.
INSTANTIATE_TEST_SUITE_P(
    TmaRing, CudaPaged,
    ::testing::Values(
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pipeline=wgmma,bm=64,bn=128,warps=4,stages=2",
                     16, 2},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pipeline=wgmma,bm=64,bn=128,warps=4,stages=3",
                     8, 8},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,"
                     "softcap=1,bias=alibi,lse=1,pack_gqa=1,pipeline=wgmma,"
                     "bm=64,bn=128,warps=4,stages=2",
                     16, 2},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pipeline=wgmma,stages=2",
                     256, 300},
        GpuPagedCase{"family=fwd_paged,dtype=fp16,d=256,lse=1,pipeline=wgmma,"
                     "stages=2",
                     16, 300},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=256,mask=causal_br,lse=1,"
                     "pipeline=wgmma,stages=2",
                     256, 8},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=64,mask=window,lse=1,"
                     "pipeline=wgmma,stages=2",
                     32, 300},
        GpuPagedCase{"family=fwd_paged,dtype=fp8_e4m3,d=128,mask=causal_br,"
                     "lse=1,pipeline=wgmma,stages=2",
                     64, 300},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,lse=1,pack_gqa=1,"
                     "pipeline=wgmma,bm=64,bn=64,warps=4,stages=2",
                     16, 1},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pack_gqa=1,pipeline=wgmma,bm=64,bn=64,warps=4,stages=2",
                     64, 2}));

// Keys as the products' rows on paged K/V: one 8:1 group's token in an m16
// tile over pages of 16 (8 boxes a key tile), and two tokens in two m8
// tiles over pages of 64.
INSTANTIATE_TEST_SUITE_P(
    KeysAsRows, CudaPaged,
    ::testing::Values(
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1,"
                     "pack_gqa=1,pipeline=wgmma,bm=16,bn=128,warps=4,stages=2",
                     16, 1},
        GpuPagedCase{"family=fwd_paged,dtype=bf16,d=128,softcap=1,"
                     "bias=alibi,lse=1,pack_gqa=1,pipeline=wgmma,bm=8,bn=128,"
                     "warps=4,stages=2",
                     64, 2}));

TEST(CudaAppendKv, PagedHalfRotaryWithQ) {
  SKIP_WITHOUT_GPU(runner);
  std::optional<KernelSpec> spec =
      gpuSpec(*runner, "family=append_kv,dtype=bf16,d=128");
  ASSERT_TRUE(spec);
  AppendKvProblem p = AppendKvProblem::forSpec(*spec);
  p.batch = 3;
  p.headsQ = 16;
  p.headsKv = 2;
  p.newTokens = 5;
  p.cacheLens = {0, 15, 40};
  p.rotary = RotaryForm::Half;
  p.rotateQ = true;
  p.cache = KvCacheLayout::paged(16, 8, 3);
  ASSERT_FALSE(bool(p.validate(*spec)));
  AppendData host(*spec, p, 9);
  std::vector<float> kBefore = host.kCache.toFloat(),
                     vBefore = host.vCache.toFloat();
  CudaDriver &driver = runner->driver();
  GpuBuffer kNew =
      uploadOrFail(driver, host.kNew.data(), host.kNew.sizeInBytes(), "k_new");
  GpuBuffer vNew =
      uploadOrFail(driver, host.vNew.data(), host.vNew.sizeInBytes(), "v_new");
  GpuBuffer k =
      uploadOrFail(driver, host.kCache.data(), host.kCache.sizeInBytes(), "k");
  GpuBuffer v =
      uploadOrFail(driver, host.vCache.data(), host.vCache.sizeInBytes(), "v");
  GpuBuffer q = uploadOrFail(driver, host.q.data(), host.q.sizeInBytes(), "q");
  GpuBuffer qOut =
      uploadOrFail(driver, host.qOut.data(), host.qOut.sizeInBytes(), "q_out");
  GpuBuffer table = uploadOrFail(driver, host.blockTable.data(),
                                 4 * host.blockTable.size(), "table");
  GpuBuffer lens = uploadOrFail(driver, host.seqlens.data(),
                                4 * host.seqlens.size(), "lens");
  GpuBuffer cosT = uploadOrFail(driver, host.tables.cos.data(),
                                4 * host.tables.cos.size(), "cos");
  GpuBuffer sinT = uploadOrFail(driver, host.tables.sin.data(),
                                4 * host.tables.sin.size(), "sin");
  AppendKvBuffers b;
  b.kNew = kNew.pointer();
  b.vNew = vNew.pointer();
  b.cache = {k.pointer(), v.pointer(),
             static_cast<const int32_t *>(table.pointer()),
             static_cast<const int32_t *>(lens.pointer())};
  b.q = q.pointer();
  b.qOut = qOut.pointer();
  b.rotaryCos = static_cast<const float *>(cosT.pointer());
  b.rotarySin = static_cast<const float *>(sinT.pointer());
  auto kernel = runner->load(*spec);
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  auto stream = GpuStream::create(driver);
  ASSERT_TRUE(bool(stream));
  ASSERT_FALSE(
      bool(kernel->launch(makeAppendKvParams(*spec, p, b), stream->get())));
  ASSERT_FALSE(bool(stream->synchronize()));
  ASSERT_FALSE(bool(k.copyTo(host.kCache.data(), host.kCache.sizeInBytes())));
  ASSERT_FALSE(bool(v.copyTo(host.vCache.data(), host.vCache.sizeInBytes())));
  ASSERT_FALSE(bool(qOut.copyTo(host.qOut.data(), host.qOut.sizeInBytes())));
  AppendKvReference ref = referenceAppendKv(
      p, host.tables, kBefore, vBefore, host.blockTable, host.kNew.toFloat(),
      host.vNew.toFloat(), host.q.toFloat());
  AppendKvCheck check = compareAppendKv(
      p, host.blockTable, ref, host.kCache.toFloat(), host.vCache.toFloat(),
      kBefore, vBefore, host.qOut.toFloat(), spec->dtype, spec->outType());
  EXPECT_TRUE(check.pass) << check.summary();
}
} // namespace
