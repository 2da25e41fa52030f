//===- RunFamilies.cpp - `fmhajit run` for the multi-stage families -------===//
#include "tools/fmhajit/RunFamilies.h"
#include "runtime/api/SplitHeuristic.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/SpecParser.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/RunCommand.h"
#include "llvm/Support/Format.h"
#include <chrono>
#include <cmath>

using namespace fmhajit;
using Clock = std::chrono::steady_clock;

int fmhajit::runFamily(const RunOptions &opt) {
  if (opt.device == "cuda" && opt.spec.family == Family::FwdSplitKv)
    return runOnCuda(opt);
  if (opt.device != "host")
    return reportErrors(makeError(ErrorKind::Unsupported,
                                  "family " + keyOf(opt.spec.family) +
                                      " runs on the host only in `fmhajit run` for now (the C++ "
                                      "API launches it on CUDA: docs/api.md; fwd_splitkv runs "
                                      "here too); drop --device " +
                                      opt.device));
  auto cache = KernelCache::global();
  if (!cache)
    return reportErrors(cache.takeError());
  switch (opt.spec.family) {
  case Family::FwdSplitKv:
    return runSplitKv(opt, *cache);
  case Family::SplitKvCombine:
    return runCombine(opt, *cache);
  case Family::FwdPaged:
    return runPaged(opt, *cache);
  case Family::AppendKv:
    return runAppendKv(opt, *cache);
  default:
    return reportErrors(makeError(ErrorKind::Unsupported,
                                  "fmhajit run does not run family " + keyOf(opt.spec.family) + " yet"));
  }
}

unsigned fmhajit::resolveNumSplits(const RunOptions &opt, const AttentionProblem &problem,
                                   unsigned threads, llvm::raw_ostream &os) {
  if (opt.family.numSplits) {
    os << "splits   " << opt.family.numSplits << " (--num-splits)\n";
    return opt.family.numSplits;
  }
  unsigned n = chooseNumSplits(opt.spec, problem, threads);
  bool gpu = findArch(opt.spec.target)->backend != Backend::Host;
  os << "splits   " << n << " (chooseNumSplits for " << threads << (gpu ? " SM" : " thread")
     << (threads == 1 ? ")\n" : "s)\n");
  return n;
}

llvm::Expected<HostSplitKv> fmhajit::loadSplitKv(const KernelSpec &spec, KernelCache &cache,
                                                 llvm::raw_ostream &os) {
  Clock::time_point start = Clock::now();
  auto kernels = HostSplitKv::load(spec, cache);
  if (!kernels)
    return kernels.takeError();
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  os << "kernel   " << encodeName(spec) << "\n"
     << "combine  " << encodeName(kernels->combineKernel().spec()) << "\n"
     << "load     " << llvm::format("%.2f ms", ms) << " ("
     << originName(kernels->splitKernel().origin()) << " + "
     << originName(kernels->combineKernel().origin()) << ")\n";
  return kernels;
}

RunWorkspace::RunWorkspace(const SplitKvWorkspaceSize &size)
    : oAccum(size.oAccum, NAN), lseAccum(size.lseAccum, NAN) {}

SplitKvWorkspace RunWorkspace::pointers() {
  return {oAccum.empty() ? nullptr : oAccum.data(),
          lseAccum.empty() ? nullptr : lseAccum.data()};
}

void fmhajit::printTiming(const RunOptions &opt, llvm::function_ref<void()> call,
                          unsigned threads, double flops, double bytes,
                          llvm::raw_ostream &os) {
  unsigned ran = 0;
  double ms = medianCallMs(call, opt.iterations, ran);
  os << "time     " << llvm::format("%.3f ms", ms) << " (median of " << ran << ", " << threads
     << (threads == 1 ? " thread)" : " threads)") << "\n";
  if (flops > 0)
    os << "GFLOPS   " << llvm::format("%.1f", flops / (ms * 1e6)) << "\n";
  if (bytes > 0)
    os << "GB/s     " << llvm::format("%.2f", bytes / (ms * 1e6)) << "\n";
  os.flush();
}

std::vector<std::pair<std::string, llvm::json::Value>>
fmhajit::familyMetadata(const RunOptions &opt) {
  return {{"spec", printSpec(opt.spec)},
          {"name", encodeName(opt.spec)},
          {"family", keyOf(opt.spec.family)},
          {"dtype", keyOf(opt.spec.dtype)},
          {"batch", opt.problem.batch},
          {"heads_q", opt.problem.headsQ},
          {"heads_kv", opt.problem.headsKv},
          {"seed", static_cast<int64_t>(opt.seed)}};
}
