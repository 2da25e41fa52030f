//===- CudaTargetsTest.cpp - Driver and GPU rules that need no GPU --------===//
//
// The driver version -> PTX ISA table, the compute capability -> target
// mapping and the "can this GPU run that code" rule (CudaTargets.h), and
// that a missing libcuda is one ErrorKind::Driver error, not a crash.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/CudaTargets.h"
#include "runtime/device/CudaDriver.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

struct DriverRow {
  int driverVersion;
  unsigned ptx;
};

class DriverPtx : public ::testing::TestWithParam<DriverRow> {};

TEST_P(DriverPtx, MatchesTheReleaseNotes) {
  EXPECT_EQ(ptxVersionForDriver(GetParam().driverVersion), GetParam().ptx)
      << "driver " << GetParam().driverVersion;
}

INSTANTIATE_TEST_SUITE_P(
    Table, DriverPtx,
    ::testing::Values(DriverRow{11080, 0}, DriverRow{11080 + 9, 0},
                      DriverRow{12000, 80}, DriverRow{12010, 81},
                      DriverRow{12020, 82}, DriverRow{12030, 83},
                      DriverRow{12040, 84}, DriverRow{12050, 85},
                      DriverRow{12060, 85}, DriverRow{12080, 87},
                      DriverRow{12090, 88}, DriverRow{13000, 90},
                      DriverRow{13020, 90}, DriverRow{14000, 90}));

TEST(DriverPtx, NeverAboveWhatLlvmEmits) {
  for (int version = 12000; version <= 20000; version += 10)
    EXPECT_LE(ptxVersionForDriver(version), kMaxLlvmPtxVersion);
}

TEST(DriverPtx, VersionString) {
  EXPECT_EQ(driverVersionString(12080), "12.8");
  EXPECT_EQ(driverVersionString(13000), "13.0");
}

struct CapabilityRow {
  ComputeCapability cc;
  const char *target; ///< "" for none
};

class Capability : public ::testing::TestWithParam<CapabilityRow> {};

TEST_P(Capability, PicksTheTarget) {
  const CapabilityRow &row = GetParam();
  std::optional<llvm::StringRef> target = targetForCapability(row.cc);
  EXPECT_EQ(target.value_or("").str(), row.target)
      << "capability " << row.cc.str();
  if (target) {
    EXPECT_TRUE(targetRunsOn(*target, row.cc))
        << target->str() << " on " << row.cc.str();
    EXPECT_NE(findArch(*target), nullptr)
        << target->str() << " has no arch table";
  }
}

INSTANTIATE_TEST_SUITE_P(Table, Capability,
                         ::testing::Values(CapabilityRow{{7, 5}, ""},
                                           CapabilityRow{{8, 0}, "sm_80"},
                                           CapabilityRow{{8, 6}, "sm_86"},
                                           CapabilityRow{{8, 7}, "sm_86"},
                                           CapabilityRow{{8, 9}, "sm_89"},
                                           CapabilityRow{{9, 0}, "sm_90a"},
                                           CapabilityRow{{10, 0}, "sm_100a"},
                                           CapabilityRow{{10, 3}, "sm_89"},
                                           CapabilityRow{{12, 0}, "sm_89"}));

TEST(Capability, ArchSpecificTargetsNeedExactlyTheirGpu) {
  EXPECT_TRUE(targetRunsOn("sm_90a", {9, 0}));
  EXPECT_FALSE(targetRunsOn("sm_90a", {8, 9}));
  EXPECT_FALSE(targetRunsOn("sm_90a", {10, 0}));
  EXPECT_TRUE(targetRunsOn("sm_100a", {10, 0}));
  EXPECT_FALSE(targetRunsOn("sm_100a", {9, 0}));
  EXPECT_FALSE(targetRunsOn("sm_100a", {10, 3}));
}

TEST(Capability, PortableTargetsRunOnNewerGpus) {
  EXPECT_TRUE(targetRunsOn("sm_80", {8, 0}));
  EXPECT_TRUE(targetRunsOn("sm_80", {9, 0}));
  EXPECT_TRUE(targetRunsOn("sm_86", {8, 9}));
  EXPECT_FALSE(targetRunsOn("sm_86", {8, 0}));
  EXPECT_FALSE(targetRunsOn("sm_89", {8, 6}));
  EXPECT_TRUE(targetRunsOn("sm_89", {12, 0}));
  EXPECT_FALSE(targetRunsOn("host", {9, 0}));
  EXPECT_FALSE(targetRunsOn("gfx942", {9, 0}));
}

// Every NVPTX arch table has a capability, so no target is unreachable.
TEST(Capability, EveryNvptxTableIsKnown) {
  for (const ArchInfo &arch : allArchs())
    if (arch.backend == Backend::Nvptx)
      EXPECT_TRUE(capabilityOfTarget(arch.name).has_value()) << arch.name;
}

TEST(CudaDriver, MissingLibraryIsADriverError) {
  auto driver = CudaDriver::load("libfmhajit-no-such-cuda.so.1");
  ASSERT_FALSE(bool(driver));
  Problems problems = takeProblems(driver.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Driver);
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(problems.messages[0].find(
                "no CUDA driver: libfmhajit-no-such-cuda.so.1 could not "
                "be loaded"),
            std::string::npos)
      << problems.messages[0];
  EXPECT_NE(
      problems.messages[0].find("--device cuda needs an NVIDIA GPU and driver"),
      std::string::npos);
}

// Where there is no driver, get() fails the same way, and again when asked
// again (the failure is remembered, not retried into a crash).
TEST(CudaDriver, GetFailsCleanlyWithoutADriver) {
  auto first = CudaDriver::get();
  if (first)
    GTEST_SKIP() << "a CUDA driver is present: " << first->describe();
  Problems problems = takeProblems(first.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Driver);
  auto second = CudaDriver::get();
  ASSERT_FALSE(bool(second));
  EXPECT_EQ(takeProblems(second.takeError()).kind, ErrorKind::Driver);
}

} // namespace
