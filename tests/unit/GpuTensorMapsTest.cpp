//===- GpuTensorMapsTest.cpp - TMA tensor maps and the persistent grid ----===//
//
// What a TMA kernel's tensor maps describe (TensorMapBoxes.h) and how a
// plan's prepared maps are bound to a call's pointers (GpuTensorMaps.h),
// over the fake driver, whose maps spell out the request they encode; and
// where a walking kernel runs on a block per multiprocessor
// (runsPersistent).
//
//===----------------------------------------------------------------------===//
#include "runtime/device/GpuTensorMaps.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/device/HostKernel.h"
#include "runtime/device/PagedKv.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "tests/unit/FakeGpuDriver.h"
#include "tests/unit/ScopedEnv.h"
#include "tests/unit/SpecTesting.h"
#include "gtest/gtest.h"
#include <cstring>
#include <optional>
#include <vector>

using namespace fmhajit;
using fmhajit::unit::FakeDriver;

namespace {

/// A TMA kernel's call: K and V with fewer heads than Q (GQA), at
/// addresses TMA takes unless a test moves one.
class TensorMapsOnFake : public ::testing::Test {
protected:
  FakeDriver driver;
  KernelSpec spec = resolvedSpec(
      "family=fwd,dtype=bf16,d=64,target=sm_90a,pipeline=wgmma,stages=2");
  KernelArgs args = [this] {
    AttentionProblem problem = AttentionProblem::forSpec(spec);
    problem.batch = 2, problem.headsQ = 4, problem.headsKv = 2;
    problem.seqlenQ = 300, problem.seqlenK = 500;
    auto at = [](uintptr_t address) {
      return reinterpret_cast<void *>(address);
    };
    return makeKernelArgs(
        spec, problem,
        ForwardBuffers{at(0x100000), at(0x200000), at(0x300000), at(0x400000)});
  }();
  /// args without the call's pointers, as a plan holds them.
  KernelArgs planArgs() const {
    KernelArgs p = args;
    p.q = p.k = p.v = nullptr;
    p.o = nullptr;
    return p;
  }
};

// FMHAJIT_TMA_L2_PROMOTION replaces every map's promotion where it names
// one the driver has, and leaves the default otherwise.
TEST_F(TensorMapsOnFake, L2PromotionKnobSetsEveryMap) {
  auto promotions = [&](const char *knob) {
    ScopedEnv env;
    env.set("FMHAJIT_TMA_L2_PROMOTION", knob);
    TensorMaps maps;
    EXPECT_FALSE(bool(encodeTensorMaps(driver, spec, args, maps)));
    std::vector<uint64_t> bytes;
    for (unsigned i = 0; i < kNumTensorMaps; ++i)
      bytes.push_back(maps.map[i][14]);
    return bytes;
  };
  using Bytes = std::vector<uint64_t>;
  EXPECT_EQ(promotions(nullptr), Bytes(kNumTensorMaps, 256));
  EXPECT_EQ(promotions("128"), Bytes(kNumTensorMaps, 128));
  EXPECT_EQ(promotions("0"), Bytes(kNumTensorMaps, 0));
  EXPECT_EQ(promotions("100"), Bytes(kNumTensorMaps, 256));
  EXPECT_EQ(promotions("big"), Bytes(kNumTensorMaps, 256));
}

TEST_F(TensorMapsOnFake, BoundMapsAreTheMapsEncodedForTheCall) {
  ASSERT_TRUE(usesTensorMaps(spec));
  TensorMaps encoded;
  ASSERT_FALSE(bool(encodeTensorMaps(driver, spec, args, encoded)));
  EXPECT_EQ(driver.mapsEncoded, 3);
  std::optional<TensorMaps> prepared =
      prepareTensorMaps(driver, spec, planArgs());
  ASSERT_TRUE(prepared.has_value());
  EXPECT_EQ(driver.mapsEncoded, 6);
  int replacedBefore = driver.addressesReplaced;
  // Each launch: three replaced addresses, nothing encoded.
  for (int call = 0; call < 2; ++call) {
    TensorMaps bound;
    ASSERT_FALSE(bool(bindTensorMaps(driver, spec, *prepared, args, bound)));
    EXPECT_EQ(std::memcmp(&bound, &encoded, sizeof(TensorMaps)), 0);
    EXPECT_EQ(driver.mapsEncoded, 6);
    EXPECT_EQ(driver.addressesReplaced, replacedBefore + 3 * (call + 1));
  }
  // A call on other pointers gets its own bases.
  args.v = reinterpret_cast<void *>(0x500000);
  ASSERT_FALSE(bool(encodeTensorMaps(driver, spec, args, encoded)));
  TensorMaps bound;
  ASSERT_FALSE(bool(bindTensorMaps(driver, spec, *prepared, args, bound)));
  EXPECT_EQ(std::memcmp(&bound, &encoded, sizeof(TensorMaps)), 0);
  EXPECT_EQ(bound.map[kVMap][0], 0x500000u);
}

TEST_F(TensorMapsOnFake, BindingRefusesAPointerAsEncodingDoes) {
  std::optional<TensorMaps> prepared =
      prepareTensorMaps(driver, spec, planArgs());
  ASSERT_TRUE(prepared.has_value());
  args.k = reinterpret_cast<void *>(0x200008);
  TensorMaps maps;
  Problems encoding = takeProblems(encodeTensorMaps(driver, spec, args, maps));
  Problems binding =
      takeProblems(bindTensorMaps(driver, spec, *prepared, args, maps));
  ASSERT_EQ(binding.messages.size(), 1u);
  EXPECT_EQ(binding.kind, ErrorKind::Usage);
  EXPECT_EQ(binding.messages, encoding.messages);
  EXPECT_EQ(binding.messages[0],
            "k must start on a 16-byte boundary for TMA (pipeline=wgmma, "
            "stages>=2); use stages=1");
}

TEST_F(TensorMapsOnFake, LeavesStridesTmaCannotTakeToEachLaunch) {
  args.kStrides.head = 3; // 6 bytes: not a multiple of 16
  EXPECT_FALSE(prepareTensorMaps(driver, spec, planArgs()).has_value());
  TensorMaps maps;
  Problems problems = takeProblems(encodeTensorMaps(driver, spec, args, maps));
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_EQ(problems.messages[0],
            "k's head stride is 6 bytes; TMA (pipeline=wgmma, stages>=2) needs "
            "a positive multiple of 16: use stages=1");
}

TEST_F(TensorMapsOnFake, WithoutAddressReplacementEachLaunchEncodes) {
  driver.replacesAddresses = false;
  EXPECT_FALSE(prepareTensorMaps(driver, spec, planArgs()).has_value());
}

// v_pretranspose: the V map views V^T in the workspace, [keys, dv, heads,
// batch] with keys padded to the pass's 64, in boxes of one slab of keys
// (bn = 96: 32 bytes) by dv rows; a launch binds valuesT, not v.
TEST_F(TensorMapsOnFake, PretransposedValuesMapViewsVTInTheWorkspace) {
  KernelSpec fp8 =
      resolvedSpec("family=fwd,dtype=fp8_e4m3,d=128,target=sm_90a,bm=192,"
                   "bn=96,warps=12,v_pretranspose=1");
  AttentionProblem problem = AttentionProblem::forSpec(fp8);
  problem.batch = 2, problem.headsQ = 4, problem.headsKv = 2;
  problem.seqlenQ = 300, problem.seqlenK = 500;
  auto at = [](uintptr_t address) { return reinterpret_cast<void *>(address); };
  KernelArgs call = makeKernelArgs(
      fp8, problem,
      ForwardBuffers{at(0x100000), at(0x200000), at(0x300000), at(0x400000)});
  call.valuesT = at(0x600000);
  TensorMaps maps;
  ASSERT_FALSE(bool(encodeTensorMaps(driver, fp8, call, maps)));
  const uint64_t *v = reinterpret_cast<const uint64_t *>(maps.map[kVMap]);
  EXPECT_EQ(v[0], 0x600000u);
  EXPECT_EQ(pretransposedKeys(500), 512);
  EXPECT_EQ(std::vector<uint64_t>(v + 1, v + 5),
            (std::vector<uint64_t>{512, 128, 2, 2}));
  EXPECT_EQ(std::vector<uint64_t>(v + 5, v + 8),
            (std::vector<uint64_t>{512, 128 * 512, 2 * 128 * 512}));
  EXPECT_EQ(std::vector<uint64_t>(v + 8, v + 12),
            (std::vector<uint64_t>{32, 128, 1, 1}));
  EXPECT_EQ(v[12], 32u);
  EXPECT_EQ(pretransposedValuesBytes(fp8, 2, 2, 500), 2 * 2 * 128 * 512);

  KernelArgs plan = call;
  plan.q = plan.k = plan.v = plan.valuesT = nullptr;
  std::optional<TensorMaps> prepared = prepareTensorMaps(driver, fp8, plan);
  ASSERT_TRUE(prepared.has_value());
  TensorMaps bound;
  ASSERT_FALSE(bool(bindTensorMaps(driver, fp8, *prepared, call, bound)));
  EXPECT_EQ(std::memcmp(&bound, &maps, sizeof(TensorMaps)), 0);

  // A workspace TMA cannot address: binding says what encoding says.
  call.valuesT = at(0x600008);
  Problems encoding = takeProblems(encodeTensorMaps(driver, fp8, call, maps));
  Problems binding =
      takeProblems(bindTensorMaps(driver, fp8, *prepared, call, bound));
  ASSERT_EQ(binding.messages.size(), 1u);
  EXPECT_EQ(binding.messages, encoding.messages);
  EXPECT_EQ(binding.messages[0].rfind("v^T (the workspace) must start on a "
                                      "16-byte boundary",
                                      0),
            0u)
      << binding.messages[0];
}

// Varlen on the ring: each map views the packed rows (KernelArgs::totalQ,
// totalK) as one sequence of a batch of one, at the packed strides; a call
// without the totals gets an error naming them, not a map of no rows.
TEST_F(TensorMapsOnFake, VarlenMapsViewThePackedRowsAsOneSequence) {
  KernelSpec varlen = resolvedSpec("family=fwd,dtype=bf16,d=64,varlen=1,"
                                   "target=sm_90a,pipeline=wgmma,stages=2");
  ASSERT_TRUE(usesTensorMaps(varlen));
  AttentionProblem problem = AttentionProblem::forSpec(varlen);
  problem.batch = 2, problem.headsQ = 4, problem.headsKv = 2;
  problem.seqlensQ = {100, 200}, problem.seqlensK = {150, 350};
  auto at = [](uintptr_t address) { return reinterpret_cast<void *>(address); };
  KernelArgs call = makeKernelArgs(
      varlen, problem,
      ForwardBuffers{at(0x100000), at(0x200000), at(0x300000), at(0x400000)});
  EXPECT_EQ(call.totalQ, 300);
  EXPECT_EQ(call.totalK, 500);
  EXPECT_EQ(call.seqlenQ, 200); // the longest, as before
  TensorMaps maps;
  ASSERT_FALSE(bool(encodeTensorMaps(driver, varlen, call, maps)));
  const uint64_t *q = reinterpret_cast<const uint64_t *>(maps.map[kQMap]);
  const uint64_t *k = reinterpret_cast<const uint64_t *>(maps.map[kKMap]);
  EXPECT_EQ(std::vector<uint64_t>(q + 1, q + 5),
            (std::vector<uint64_t>{64, 300, 4, 1}));
  EXPECT_EQ(std::vector<uint64_t>(k + 1, k + 5),
            (std::vector<uint64_t>{64, 500, 2, 1}));
  // Packed [total, heads, d] bf16: a row is heads * 64 * 2 bytes.
  EXPECT_EQ(q[5], 4u * 64 * 2);
  EXPECT_EQ(k[5], 2u * 64 * 2);
  EXPECT_EQ(k[6], 64u * 2);

  call.totalK = 0;
  Problems problems =
      takeProblems(encodeTensorMaps(driver, varlen, call, maps));
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(problems.messages[0].find("needs KernelArgs::totalQ and totalK"),
            std::string::npos)
      << problems.messages[0];
}

// fwd_paged on the ring: K and V view each pool as [pages, page rows,
// heads, d], in boxes of gcd(page size, bn) rows (bn = 128 and 80 here), and
// Q as usual; pages under 8 rows, or a call without numPages, get an error
// naming what is missing rather than a map.
TEST_F(TensorMapsOnFake, PagedMapsViewThePoolsAsPagesOfRows) {
  struct Case {
    const char *keys;
    int64_t pageSize;
    uint64_t boxRows;
  };
  for (Case c : {Case{"d=64,bn=128", 16, 16}, Case{"d=64,bn=128", 256, 128},
                 Case{"d=64,bn=128", 8, 8}, Case{"d=256,bn=80", 16, 16},
                 Case{"d=256,bn=80", 256, 16}}) {
    KernelSpec paged = resolvedSpec(
        std::string("family=fwd_paged,dtype=bf16,target=sm_90a,pipeline=wgmma,"
                    "stages=2,") +
        c.keys);
    ASSERT_TRUE(loadsPagedBoxes(paged));
    AttentionProblem a = AttentionProblem::forSpec(paged);
    a.batch = 2, a.headsQ = 4, a.headsKv = 2, a.seqlenQ = 3;
    PagedProblem problem = PagedProblem::make(
        paged, a, KvCacheLayout::paged(c.pageSize, 40, 20), {100, 200});
    auto at = [](uintptr_t address) {
      return reinterpret_cast<void *>(address);
    };
    KernelArgs call = makePagedParams(
        paged, problem,
        ForwardBuffers{at(0x100000), nullptr, nullptr, at(0x400000)},
        KvCacheBuffers{at(0x200000), at(0x300000), nullptr, nullptr});
    EXPECT_EQ(call.numPages, 40);
    TensorMaps maps;
    ASSERT_FALSE(bool(encodeTensorMaps(driver, paged, call, maps))) << c.keys;
    const uint64_t *q = reinterpret_cast<const uint64_t *>(maps.map[kQMap]);
    const uint64_t *k = reinterpret_cast<const uint64_t *>(maps.map[kKMap]);
    const uint64_t *v = reinterpret_cast<const uint64_t *>(maps.map[kVMap]);
    uint64_t d = paged.d, page = uint64_t(c.pageSize);
    EXPECT_EQ(std::vector<uint64_t>(q + 1, q + 5),
              (std::vector<uint64_t>{d, 3, 4, 2}));
    for (const uint64_t *pool : {k, v}) {
      EXPECT_EQ(std::vector<uint64_t>(pool + 1, pool + 5),
                (std::vector<uint64_t>{d, page, 2, 40}))
          << c.keys;
      // [numPages, pageSize, headsKv, d] bf16: row, head and page strides.
      EXPECT_EQ(std::vector<uint64_t>(pool + 5, pool + 8),
                (std::vector<uint64_t>{2 * d * 2, d * 2, page * 2 * d * 2}));
      EXPECT_EQ(pool[9], c.boxRows) << c.keys << ", pages of " << page;
    }
    EXPECT_EQ(q[9], uint64_t(paged.bm));
  }

  KernelSpec paged = resolvedSpec("family=fwd_paged,dtype=bf16,d=64,bn=128,"
                                  "target=sm_90a,pipeline=wgmma,stages=2");
  AttentionProblem a = AttentionProblem::forSpec(paged);
  a.batch = 1, a.headsQ = 2, a.headsKv = 2, a.seqlenQ = 1;
  PagedProblem small =
      PagedProblem::make(paged, a, KvCacheLayout::paged(4, 64, 64), {100});
  KernelArgs call = makePagedParams(paged, small, ForwardBuffers{}, {});
  TensorMaps maps;
  Problems problems = takeProblems(encodeTensorMaps(driver, paged, call, maps));
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(problems.messages[0].find("but the pages have 4: use pages of "
                                      "at least 8 rows, or stages=1"),
            std::string::npos)
      << problems.messages[0];
  call.log2PageSize = 4;
  call.numPages = 0;
  problems = takeProblems(encodeTensorMaps(driver, paged, call, maps));
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(problems.messages[0].find("needs KernelArgs::numPages"),
            std::string::npos)
      << problems.messages[0];
}

TEST_F(TensorMapsOnFake, KernelsWithoutMapsPrepareNone) {
  KernelSpec cpAsync = resolvedSpec(
      "family=fwd,dtype=bf16,d=64,target=sm_90a,pipeline=wgmma,stages=1");
  ASSERT_FALSE(usesTensorMaps(cpAsync));
  EXPECT_FALSE(prepareTensorMaps(driver, cpAsync, planArgs()).has_value());
  EXPECT_EQ(driver.mapsEncoded, 0);
}

// Where a walking kernel runs as one: unmasked up to 8192 keys, causal at
// every length, and varlen without a mask only where every sequence has the
// longest one's length (a fixed stride over unequal items leaves blocks idle).
TEST(PersistentGrid, VarlenOfUnequalLengthsTakesABlockPerItem) {
  auto argsFor = [](const KernelSpec &spec, std::vector<int64_t> lengths) {
    AttentionProblem problem = AttentionProblem::forSpec(spec);
    problem.batch = int64_t(lengths.size()), problem.headsQ = 16;
    problem.headsKv = 16;
    problem.seqlensQ = problem.seqlensK = lengths;
    return makeKernelArgs(spec, problem, ForwardBuffers{});
  };
  KernelSpec none = resolvedSpec("family=fwd,dtype=bf16,d=128,varlen=1,"
                                 "pipeline=wgmma,stages=2,target=sm_90a");
  KernelSpec causal =
      resolvedSpec("family=fwd,dtype=bf16,d=128,varlen=1,mask=causal,"
                   "pipeline=wgmma,stages=2,target=sm_90a");
  ASSERT_TRUE(walksWorkItems(none));
  ASSERT_TRUE(walksWorkItems(causal));
  EXPECT_FALSE(runsPersistent(none, argsFor(none, {512, 4096, 1024})));
  EXPECT_TRUE(runsPersistent(none, argsFor(none, {2048, 2048, 2048})));
  EXPECT_FALSE(runsPersistent(none, argsFor(none, {16384, 16384})));
  EXPECT_TRUE(runsPersistent(causal, argsFor(causal, {512, 4096, 1024})));

  KernelSpec dense = resolvedSpec(
      "family=fwd,dtype=bf16,d=128,pipeline=wgmma,stages=2,target=sm_90a");
  AttentionProblem problem = AttentionProblem::forSpec(dense);
  problem.batch = 2, problem.headsQ = problem.headsKv = 16;
  problem.seqlenQ = problem.seqlenK = 8192;
  EXPECT_TRUE(
      runsPersistent(dense, makeKernelArgs(dense, problem, ForwardBuffers{})));
  problem.seqlenQ = problem.seqlenK = 16384;
  EXPECT_FALSE(
      runsPersistent(dense, makeKernelArgs(dense, problem, ForwardBuffers{})));
}

} // namespace
