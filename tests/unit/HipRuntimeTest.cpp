//===- HipRuntimeTest.cpp - HIP, loaded at run time or clearly absent -----===//
#include "runtime/device/HipRuntime.h"
#include "specs/Errors.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

// Without ROCm, loading HIP is one driver error that says what was tried.
TEST(HipRuntime, MissingLibraryIsOneDriverError) {
  const char *names[] = {"libfmhajit-no-such-hip.so", "libfmhajit-no-such-hip.so.6"};
  auto hip = HipRuntime::load(names);
  ASSERT_FALSE(bool(hip));
  Problems problems = takeProblems(hip.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Driver);
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(problems.messages[0].find("no HIP runtime: libfmhajit-no-such-hip.so, "
                                      "libfmhajit-no-such-hip.so.6 could not be loaded"),
            std::string::npos)
      << problems.messages[0];
}

} // namespace
