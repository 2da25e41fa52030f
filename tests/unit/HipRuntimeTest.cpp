//===- HipRuntimeTest.cpp - HIP, loaded at run time or clearly absent -----===//
#include "runtime/device/HipRuntime.h"
#include "specs/Errors.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

// Without ROCm, loading HIP is one driver error that says what was tried.
TEST(HipRuntime, MissingLibraryIsOneDriverError) {
  const char *names[] = {"libfmhajit-no-such-hip.so",
                         "libfmhajit-no-such-hip.so.6"};
  auto hip = HipRuntime::load(names);
  ASSERT_FALSE(bool(hip));
  Problems problems = takeProblems(hip.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Driver);
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(problems.messages[0].find(
                "no HIP runtime: libfmhajit-no-such-hip.so, "
                "libfmhajit-no-such-hip.so.6 could not be loaded"),
            std::string::npos)
      << problems.messages[0];
}

// The target comes from the processor part of gcnArchName; feature
// suffixes (sramecc, xnack) do not change it, and GPUs without an fmhajit
// target, or names of other devices, get none.
TEST(HipRuntime, TargetForGfxName) {
  EXPECT_EQ(targetForGfxName("gfx942:sramecc+:xnack-").value_or(""), "gfx942");
  EXPECT_EQ(targetForGfxName("gfx90a:sramecc+:xnack+").value_or(""), "gfx90a");
  EXPECT_EQ(targetForGfxName("gfx950").value_or(""), "gfx950");
  EXPECT_EQ(targetForGfxName("gfx1100").value_or(""), "gfx1100");
  EXPECT_EQ(targetForGfxName("gfx1201").value_or(""), "gfx1201");
  EXPECT_FALSE(targetForGfxName("gfx906:sramecc+:xnack-").has_value());
  EXPECT_FALSE(targetForGfxName("sm_90a").has_value());
  EXPECT_FALSE(targetForGfxName("host").has_value());
  EXPECT_FALSE(targetForGfxName("").has_value());
}

} // namespace
