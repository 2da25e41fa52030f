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
// The tensor maps' tests are in GpuTensorMapsTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/DeviceForwardData.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/device/GpuResources.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "tests/unit/FakeGpuDriver.h"
#include "tests/unit/SpecTesting.h"
#include "gtest/gtest.h"
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

using namespace fmhajit;
using fmhajit::unit::FakeDriver;

namespace {

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
public:
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

// The one message a launch of \p spec's kernel with its arguments changed
// by \p edit fails with; nothing may reach the driver. Each test loads a
// kernel of its own: a module is loaded once per process, and each test has
// a fake driver of its own.
std::string refusal(GpuKernelOnFake &t, const KernelSpec &spec,
                    llvm::function_ref<void(KernelArgs &)> edit) {
  auto kernel = GpuKernel::load(t.driver, spec, *t.cache);
  EXPECT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  if (!kernel)
    return "";
  AttentionProblem problem = AttentionProblem::forSpec(spec);
  KernelArgs params = makeKernelArgs(spec, problem, ForwardBuffers{});
  edit(params);
  Problems problems = takeProblems(kernel->launch(params, nullptr));
  EXPECT_TRUE(t.driver.launches.empty());
  EXPECT_EQ(problems.messages.size(), 1u);
  return problems.messages.empty() ? "" : problems.messages[0];
}

TEST_F(GpuKernelOnFake, RefusesAnEmptyGrid) {
  KernelSpec spec =
      resolvedSpec("family=fwd,dtype=bf16,d=128,target=gfx942,pipeline=simt");
  EXPECT_EQ(refusal(*this, spec, [](KernelArgs &p) { p.batch = 0; }),
            "the problem needs 0 workgroups; the GPU launches 1 to 2^31-1");
}

// KernelArgs::tailParts (TailSplit.h) on a kernel that does not split its
// last round.
TEST_F(GpuKernelOnFake, RefusesATailSplitTheKernelDoesNotHave) {
  KernelSpec spec =
      resolvedSpec("family=fwd,dtype=bf16,d=256,target=gfx942,pipeline=simt");
  std::string message = refusal(*this, spec, [](KernelArgs &p) {
    p.tailParts = 3;
    p.tailItems = 4;
  });
  EXPECT_EQ(message, "kernel " + encodeName(spec) +
                         " does not split its last round's items "
                         "(KernelArgs::tailParts must be 0 or 1)");
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

} // namespace
