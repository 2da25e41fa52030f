//===- GpuLayerTest.cpp - The GPU layer over a driver in host memory ------===//
//
// Everything above GpuDriver is written once for CUDA and HIP, so it can
// be checked without a GPU over a fake driver whose "device" memory is
// host memory and whose launches are recorded: the named allocation
// error, NaN poisoning, DeviceForwardData's round trip, and GpuKernel's
// load (the backend's hooks, one module per kernel per process) and
// launch (grid from workItems, the KernelArgs bytes, timing by events).
// The fake runs AMDGPU code objects (compiled here, as the lit tests do),
// so its modules never meet a real CUDA driver's in the process table; each
// test loads its own spec, since that table outlives each test's fake.
// Its tensor maps spell out the request they encode, so that a plan's
// prepared maps bound to a call's pointers can be compared with the maps
// encoded for that call (GpuTensorMaps.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/device/DeviceForwardData.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/device/GpuResources.h"
#include "runtime/device/GpuTensorMaps.h"
#include "runtime/device/KernelAbiCheck.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "tests/unit/SpecTesting.h"
#include "gtest/gtest.h"
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

using namespace fmhajit;

namespace {

/// A GpuDriver over host memory that records what it is asked to do.
class FakeDriver final : public GpuDriver {
public:
  struct Launch {
    unsigned grid = 0;
    GpuLaunchShape shape;
    GpuStreamHandle stream = nullptr;
    std::vector<char> args;
  };
  GpuDeviceInfo info{0, "Fake GPU", size_t(1) << 30, 8, std::string("gfx942")};
  size_t allocLimit = SIZE_MAX;
  int modulesLoaded = 0, buffersReleased = 0;
  int mapsEncoded = 0, addressesReplaced = 0;
  bool replacesAddresses = true; ///< as cuTensorMapReplaceAddress
  float clockMs = 0;             ///< advanced 1.5 ms by every record
  std::vector<Launch> launches;

  Backend backend() const override { return Backend::Amdgpu; }
  const GpuDeviceInfo &device() const override { return info; }
  std::string describe() const override { return info.name; }
  std::string noTargetReason() const override {
    return "a fake has every target";
  }
  llvm::Expected<void *> allocate(size_t bytes) override {
    if (bytes > allocLimit)
      return makeError(ErrorKind::Driver, "fakeMalloc failed: out of memory");
    return std::malloc(bytes);
  }
  void release(void *ptr) override {
    std::free(ptr);
    ++buffersReleased;
  }
  std::string freeMemoryNote() override { return " (1.0 MiB of 2.0 MiB free)"; }
  llvm::Error copyToDevice(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return llvm::Error::success();
  }
  llvm::Error copyToHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return llvm::Error::success();
  }
  llvm::Error fill16(void *dst, uint16_t value, size_t count) override {
    std::fill_n(static_cast<uint16_t *>(dst), count, value);
    return llvm::Error::success();
  }
  llvm::Error fill32(void *dst, uint32_t value, size_t count) override {
    std::fill_n(static_cast<uint32_t *>(dst), count, value);
    return llvm::Error::success();
  }
  llvm::Expected<GpuStreamHandle> createStream() override { return new int(0); }
  void destroyStream(GpuStreamHandle stream) override {
    delete static_cast<int *>(stream);
  }
  llvm::Error synchronize(GpuStreamHandle) override {
    return llvm::Error::success();
  }
  llvm::Expected<GpuEventHandle> createEvent() override { return new float(0); }
  void destroyEvent(GpuEventHandle event) override {
    delete static_cast<float *>(event);
  }
  llvm::Error record(GpuEventHandle event, GpuStreamHandle) override {
    *static_cast<float *>(event) = clockMs += 1.5f;
    return llvm::Error::success();
  }
  llvm::Expected<float> elapsedMs(GpuEventHandle begin,
                                  GpuEventHandle end) override {
    return *static_cast<float *>(end) - *static_cast<float *>(begin);
  }
  llvm::Expected<GpuLoadedImage> loadModule(llvm::StringRef,
                                            const ArchInfo &) override {
    ++modulesLoaded;
    return GpuLoadedImage{new int(0), "fake log"};
  }
  void unloadModule(GpuModuleHandle module) override {
    delete static_cast<int *>(module);
  }
  llvm::Expected<GpuFunctionHandle> function(GpuModuleHandle module,
                                             llvm::StringRef) override {
    return module;
  }
  llvm::Error launch(GpuFunctionHandle, unsigned gridBlocks,
                     GpuLaunchShape shape, GpuStreamHandle stream,
                     const void *args, size_t argBytes,
                     const TensorMaps *) override {
    const char *bytes = static_cast<const char *>(args);
    launches.push_back({gridBlocks, shape, stream,
                        std::vector<char>(bytes, bytes + argBytes)});
    return llvm::Error::success();
  }
  // Word 0 holds the base, the rest every other field of the request.
  llvm::Error encodeTensorMap(const TensorMapRequest &r, void *map) override {
    ++mapsEncoded;
    auto *words = static_cast<uint64_t *>(map);
    std::fill_n(words, 16, 0);
    words[0] = reinterpret_cast<uintptr_t>(r.base);
    std::copy_n(r.dims, 4, words + 1);
    std::copy_n(r.strideBytes, 3, words + 5);
    std::copy_n(r.box, 4, words + 8);
    words[12] = r.swizzleBytes;
    words[13] = uint64_t(r.dtype);
    return llvm::Error::success();
  }
  llvm::Error replaceTensorMapAddress(void *map, const void *base) override {
    if (!replacesAddresses)
      return GpuDriver::replaceTensorMapAddress(map, base);
    ++addressesReplaced;
    static_cast<uint64_t *>(map)[0] = reinterpret_cast<uintptr_t>(base);
    return llvm::Error::success();
  }
  llvm::Error checkTarget(const ArchInfo &arch) const override {
    if (arch.backend == Backend::Amdgpu)
      return llvm::Error::success();
    return makeError(ErrorKind::Usage,
                     "target " + arch.name + " does not run on the fake");
  }
  CompileOptions compileOptions() const override { return {}; }
  llvm::Error checkArtifact(llvm::StringRef bytes, llvm::StringRef name,
                            GpuKernelResources &resources) const override {
    auto metadata = checkKernelAbi(bytes, name);
    if (!metadata)
      return metadata.takeError();
    resources.codeObject = std::move(*metadata);
    return llvm::Error::success();
  }
  llvm::Expected<GpuLaunchShape>
  configureKernel(GpuFunctionHandle, const KernelSpec &spec,
                  GpuKernelResources &) override {
    return GpuLaunchShape{spec.warps * 64, 0};
  }
  const char *blockNoun() const override { return "workgroups"; }
};

TEST(GpuBuffer, AllocationErrorNamesTheBufferAndFreeMemory) {
  FakeDriver driver;
  driver.allocLimit = 0;
  auto buffer = GpuBuffer::create(driver, 1 << 20, "q");
  ASSERT_FALSE(bool(buffer));
  Problems problems = takeProblems(buffer.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Driver);
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_EQ(problems.messages[0], "cannot allocate 1.0 MiB for q on the GPU "
                                  "(1.0 MiB of 2.0 MiB free): fakeMalloc "
                                  "failed: out of memory; use a smaller batch, "
                                  "fewer heads or shorter sequences");
}

TEST(GpuBuffer, EmptyBuffersAllocateNothing) {
  FakeDriver driver;
  driver.allocLimit = 0;
  auto buffer = GpuBuffer::create(driver, 0, "lse");
  ASSERT_TRUE(bool(buffer)) << llvm::toString(buffer.takeError());
  EXPECT_EQ(buffer->pointer(), nullptr);
}

TEST(GpuBuffer, PoisonWritesQuietNaNsAndReleases) {
  FakeDriver driver;
  {
    auto buffer = GpuBuffer::create(driver, 8, "o");
    ASSERT_TRUE(bool(buffer));
    uint32_t words[2];
    ASSERT_FALSE(bool(buffer->poison(DType::F32)));
    ASSERT_FALSE(bool(buffer->copyTo(words, 8)));
    EXPECT_EQ(words[0], 0x7FC00000u);
    EXPECT_EQ(words[1], 0x7FC00000u);
    uint16_t halves[4];
    ASSERT_FALSE(bool(buffer->poison(DType::F16)));
    ASSERT_FALSE(bool(buffer->copyTo(halves, 8)));
    EXPECT_EQ(halves[3], 0x7E00);
    ASSERT_FALSE(bool(buffer->poison(DType::BF16)));
    ASSERT_FALSE(bool(buffer->copyTo(halves, 8)));
    EXPECT_EQ(halves[0], 0x7FC0);
    EXPECT_EQ(takeProblems(buffer->poison(DType::F8E4M3)).kind,
              ErrorKind::Unsupported);
  }
  EXPECT_EQ(driver.buffersReleased, 1);
}

TEST(DeviceForwardData, UploadsPoisonsAndDownloads) {
  FakeDriver driver;
  KernelSpec spec = resolvedSpec(
      "family=fwd,dtype=fp32,d=64,lse=1,target=gfx942,pipeline=simt");
  AttentionProblem problem = AttentionProblem::forSpec(spec);
  problem.seqlenQ = 3, problem.seqlenK = 5;
  std::vector<float> q(3 * 64, 1.f), k(5 * 64, 2.f), v(5 * 64, 3.f),
      o(3 * 64, 0.f), lse(3, 0.f);
  ForwardBuffers host{q.data(), k.data(), v.data(), o.data(), lse.data()};
  auto data = DeviceForwardData::upload(driver, spec, problem, host);
  ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
  ForwardBuffers device = data->buffers();
  EXPECT_EQ(static_cast<const float *>(device.k)[5 * 64 - 1], 2.f);
  EXPECT_EQ(static_cast<const float *>(device.v)[0], 3.f);
  static_cast<float *>(device.o)[0] = 7.f; // what a kernel would write
  ASSERT_FALSE(bool(data->download(host)));
  EXPECT_EQ(o[0], 7.f);
  EXPECT_TRUE(std::isnan(o[1])); // poisoned, never written
  EXPECT_TRUE(std::isnan(lse[2]));
}

class GpuKernelOnFake : public ::testing::Test {
protected:
  FakeDriver driver;
  std::unique_ptr<KernelCache> cache = [] {
    CacheConfig config;
    config.disk = false;
    auto made = KernelCache::create(std::move(config));
    EXPECT_TRUE(bool(made)) << llvm::toString(made.takeError());
    return std::move(*made);
  }();
};

TEST_F(GpuKernelOnFake, LoadsOnceAndLaunchesOneKernelArgsPerWorkItem) {
  KernelSpec spec =
      resolvedSpec("family=fwd,dtype=bf16,d=64,target=gfx942,pipeline=simt");
  auto first = GpuKernel::load(driver, spec, *cache);
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  auto second = GpuKernel::load(driver, spec, *cache);
  ASSERT_TRUE(bool(second)) << llvm::toString(second.takeError());
  EXPECT_EQ(driver.modulesLoaded, 1); // one module per kernel per process
  EXPECT_FALSE(first->loadStats().moduleReused);
  EXPECT_TRUE(second->loadStats().moduleReused);
  EXPECT_EQ(first->blockThreads(), spec.warps * 64);
  ASSERT_TRUE(first->resources().codeObject.has_value());
  EXPECT_EQ(first->resources().codeObject->name, encodeName(spec));
  EXPECT_EQ(first->jitLog(), "fake log");

  AttentionProblem problem = AttentionProblem::forSpec(spec);
  problem.batch = 2, problem.headsQ = 3, problem.headsKv = 3;
  problem.seqlenQ = 100, problem.seqlenK = 100;
  KernelArgs params = makeKernelArgs(spec, problem, ForwardBuffers{});
  int stream = 0;
  ASSERT_FALSE(bool(first->launch(params, &stream)));
  ASSERT_EQ(driver.launches.size(), 1u);
  const FakeDriver::Launch &l = driver.launches.back();
  EXPECT_EQ(int64_t(l.grid), workItems(spec, params));
  EXPECT_EQ(l.shape.blockThreads, spec.warps * 64);
  EXPECT_EQ(l.stream, &stream);
  ASSERT_EQ(l.args.size(), sizeof(KernelArgs));
  EXPECT_EQ(std::memcmp(l.args.data(), &params, sizeof(KernelArgs)), 0);

  auto ms = first->launchTimed(params, &stream);
  ASSERT_TRUE(bool(ms)) << llvm::toString(ms.takeError());
  EXPECT_FLOAT_EQ(*ms, 1.5f); // the fake's clock between the two records
  EXPECT_EQ(driver.launches.size(), 2u);
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

TEST_F(GpuKernelOnFake, RefusesAnEmptyGrid) {
  KernelSpec spec =
      resolvedSpec("family=fwd,dtype=bf16,d=128,target=gfx942,pipeline=simt");
  auto kernel = GpuKernel::load(driver, spec, *cache);
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  AttentionProblem problem = AttentionProblem::forSpec(spec);
  KernelArgs params = makeKernelArgs(spec, problem, ForwardBuffers{});
  params.batch = 0;
  Problems problems = takeProblems(kernel->launch(params, nullptr));
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_EQ(problems.messages[0],
            "the problem needs 0 workgroups; the GPU launches 1 to 2^31-1");
  EXPECT_TRUE(driver.launches.empty());
}

TEST_F(GpuKernelOnFake, AsksTheDriverWhetherTheTargetRuns) {
  auto kernel = GpuKernel::load(
      driver, resolvedSpec("family=fwd,dtype=bf16,d=64,target=sm_80"), *cache);
  ASSERT_FALSE(bool(kernel));
  Problems problems = takeProblems(kernel.takeError());
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_EQ(problems.messages[0], "target sm_80 does not run on the fake");
  EXPECT_EQ(driver.modulesLoaded, 0);
}

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

TEST_F(TensorMapsOnFake, KernelsWithoutMapsPrepareNone) {
  KernelSpec cpAsync = resolvedSpec(
      "family=fwd,dtype=bf16,d=64,target=sm_90a,pipeline=wgmma,stages=1");
  ASSERT_FALSE(usesTensorMaps(cpAsync));
  EXPECT_FALSE(prepareTensorMaps(driver, cpAsync, planArgs()).has_value());
  EXPECT_EQ(driver.mapsEncoded, 0);
}

} // namespace
