//===- KernelFingerprintTest.cpp - What goes into an artifact's cache key -===//
#include "compiler/KernelCompiler.h"
#include "specs/ArchTable.h"
#include <gtest/gtest.h>

using namespace fmhajit;

namespace {

// The emit options that change NVIDIA code (bounded waits, the timeline's
// stamps, the full softmax on dead rows) each get a key of their own, so a
// cached kernel built with one is never loaded for a call without it.
TEST(KernelFingerprint, NvptxEmitOptionsEachChangeTheKey) {
  const ArchInfo &arch = *findArch("sm_90a");
  CompileOptions plain, bounded, timeline, both, fullRows;
  bounded.emit.boundedWaits = true;
  timeline.emit.timeline = true;
  both.emit.boundedWaits = both.emit.timeline = true;
  fullRows.emit.skipDeadRows = false;
  std::string keys[] = {
      kernelFingerprint(arch, plain), kernelFingerprint(arch, bounded),
      kernelFingerprint(arch, timeline), kernelFingerprint(arch, both),
      kernelFingerprint(arch, fullRows)};
  for (unsigned i = 0; i < 5; ++i)
    for (unsigned j = i + 1; j < 5; ++j)
      EXPECT_NE(keys[i], keys[j]) << i << " and " << j;
  EXPECT_EQ(kernelFingerprint(arch, plain), kernelFingerprint(arch, {}));
}

} // namespace
