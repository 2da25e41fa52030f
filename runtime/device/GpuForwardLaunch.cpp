//===- GpuForwardLaunch.cpp - A forward call's kernels on one stream ------===//
#include "runtime/device/GpuForwardLaunch.h"
#include "runtime/device/GpuResources.h"
#include "runtime/device/SplitKv.h"
#include "runtime/device/TuningKnobs.h"
#include <atomic>
#include <random>

using namespace fmhajit;

// A process's tags count up from a random start, so that neither an earlier
// call of this process nor another process that used the same memory left
// marks that this call's combine would take for its own; 0 is never one.
static int64_t nextPartialsTag() {
  static std::atomic<uint64_t> next{[] {
    std::random_device seed;
    return (uint64_t(seed()) << 32) ^ seed();
  }()};
  uint64_t tag = 0;
  while (tag == 0)
    tag = next.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int64_t>(tag);
}

// The combine waits for each part's marks where the split kernel marks
// them and the workspace holds them. Not under graph capture: a graph's
// replays would repeat one tag, and the second would find the first's
// marks. FMHAJIT_PART_MARKS=0 turns the marks off (bench/ A/B runs).
llvm::Expected<int64_t>
GpuForwardLaunch::partialsTag(const KernelArgs &params,
                              GpuStreamHandle stream) const {
  int64_t knob = knobFromEnvironment("FMHAJIT_PART_MARKS");
  if (!combine || !params.partialTags || !publishesPartials(kernel.spec()) ||
      knob == 0)
    return 0;
  if (knob == 2) // EXPERIMENT: no capture query
    return nextPartialsTag();
  llvm::Expected<bool> capturing = kernel.driver().capturing(stream);
  if (!capturing)
    return capturing.takeError();
  return *capturing ? 0 : nextPartialsTag();
}

llvm::Error GpuForwardLaunch::launch(const KernelArgs &params,
                                     GpuStreamHandle stream,
                                     const TensorMaps *maps) const {
  llvm::Expected<int64_t> tag = partialsTag(params, stream);
  if (!tag)
    return tag.takeError();
  KernelArgs marked = params;
  marked.partialsTag = *tag;
  if (llvm::Error err = kernel.launch(marked, stream, maps))
    return err;
  if (!combine)
    return llvm::Error::success();
  return combine->launch(makeCombineParams(combine->spec(), marked), stream);
}

llvm::Expected<float> GpuForwardLaunch::launchTimed(const KernelArgs &params,
                                                    GpuStreamHandle stream,
                                                    GpuTimer &timer) const {
  return timedLaunch(timer, stream, [&] { return launch(params, stream); });
}
