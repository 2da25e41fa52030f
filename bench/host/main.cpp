//===- main.cpp - fmhajit-bench-host: fmhajit on this CPU, against limits -===//
//
// One run measures, in order: the FMA peak (one thread, all threads), the
// compile latency (before any throughput kernel is loaded, so cold loads
// are really cold), and forward throughput against the OpenBLAS peer. It
// prints each table as it goes, then the goals, and writes the JSON.
// docs/bench.md says how to read it.
//
//===----------------------------------------------------------------------===//
#include "bench/host/BenchReport.h"
#include "bench/host/FmhajitRunner.h"
#include "bench/host/ThroughputBench.h"
#include "compiler/KernelCache.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Threading.h"
#include "llvm/TargetParser/Host.h"
#include <algorithm>
#include <map>

using namespace fmhajit;
using namespace fmhajit::bench;

static llvm::cl::OptionCategory benchCategory("fmhajit-bench-host options");
static llvm::cl::opt<std::string>
    jsonPath("json", llvm::cl::desc("where to write the JSON"),
             llvm::cl::init("bench-host.json"), llvm::cl::value_desc("path"),
             llvm::cl::cat(benchCategory));
static llvm::cl::opt<bool>
    quick("quick",
          llvm::cl::desc("a couple of small cases (< 30 s), for smoke tests"),
          llvm::cl::cat(benchCategory));
static llvm::cl::opt<std::string>
    fmhajitBinary("fmhajit",
                  llvm::cl::desc("the fmhajit CLI, for the disk-hit processes"),
                  llvm::cl::init(FMHAJIT_BINARY), llvm::cl::value_desc("path"),
                  llvm::cl::cat(benchCategory));

static std::string errorText(llvm::Error err) {
  return llvm::join(takeProblems(std::move(err)).messages, "; ");
}

// The specs of the throughput cases, each once: the cold-compile specs.
static std::vector<std::string>
caseSpecs(const std::vector<ForwardCase> &cases) {
  std::vector<std::string> specs;
  for (const ForwardCase &c : cases) {
    std::string text = forwardSpecText(c.dtype, c.d, c.causal);
    if (std::find(specs.begin(), specs.end(), text) == specs.end())
      specs.push_back(text);
  }
  return specs;
}

static void measureCompile(BenchReport &report,
                           const std::vector<ForwardCase> &cases) {
  CompileLatencyOptions options;
  options.specs = caseSpecs(cases);
  options.memoryHitRuns = quick ? 200 : 2000;
  options.diskHitRuns = quick ? 2 : 5;
  options.fmhajitBinary = fmhajitBinary;
  auto latency = measureCompileLatency(options);
  if (latency)
    report.compile = std::move(*latency);
  else
    report.compileError = errorText(latency.takeError());
  printCompileLatency(llvm::outs(), report);
}

static int measureForward(BenchReport &report,
                          const std::vector<ForwardCase> &cases) {
  auto cache = KernelCache::global();
  if (!cache) {
    llvm::errs() << "error: " << errorText(cache.takeError()) << "\n";
    return 1;
  }
  // A row's contenders (fmhajit, the peer's modes, the FMA peak) run in
  // turns for about 4 s: up to 25 rounds, whose best runs are steady on a
  // shared machine.
  TimingPolicy policy{4.0, 3, 25};
  if (quick)
    policy = {0.2, 2, 5};
  // FMA work per thread count, timed in each row's turns.
  std::map<unsigned, FmaWork> peakWork;
  if (fmaWidthBits())
    for (const ForwardCase &c : cases)
      peakWork.try_emplace(c.threads, c.threads, quick ? 0.01 : 0.05);
  printForwardHeader(llvm::outs());
  for (const ForwardCase &c : cases) {
    auto work = peakWork.find(c.threads);
    report.forward.push_back(runForwardCase(
        c, *cache, policy, work == peakWork.end() ? nullptr : &work->second));
    printForwardRow(llvm::outs(), report.forward.back(), report);
    llvm::outs().flush();
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(benchCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "fmhajit host benchmark: throughput against the FMA peak "
      "and an OpenBLAS peer, and compile latency\n");
  Clock::time_point start = Clock::now();
  BenchReport report;
  report.quick = quick;
  report.cpu = llvm::sys::getHostCPUName().str();
  report.allThreads = llvm::hardware_concurrency().compute_thread_count();
  llvm::outs() << "fmhajit-bench-host" << (quick ? " --quick" : "") << ": "
               << report.cpu << ", " << report.allThreads
               << " hardware threads\n\n";
  double peakSeconds = quick ? 0.05 : 0.2;
  for (unsigned threads : {1u, report.allThreads}) {
    report.peaks.push_back(measureFmaPeak(threads, peakSeconds, quick ? 3 : 5));
    if (report.allThreads == 1)
      break;
  }
  printPeaks(llvm::outs(), report);
  llvm::outs() << "\n";
  std::vector<ForwardCase> cases = forwardCases(quick, report.allThreads);
  measureCompile(report, cases);
  llvm::outs() << "\n";
  if (int rc = measureForward(report, cases))
    return rc;
  report.totalSeconds = secondsSince(start);
  std::vector<Goal> goals = evaluateGoals(report);
  llvm::outs() << "\n";
  printGoals(llvm::outs(), goals);
  if (llvm::Error err = writeJsonReport(report, goals, jsonPath)) {
    llvm::errs() << "error: " << errorText(std::move(err)) << "\n";
    return 1;
  }
  llvm::outs() << llvm::format("\ntotal %.1f s; JSON written to ",
                               report.totalSeconds)
               << jsonPath << "\n";
  return 0;
}
