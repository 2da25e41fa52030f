//===- main.cpp - fmhajit-bench-api: api::run's per-call overhead ---------===//
//
// Prints a table (ns per call of each path, and each as a ratio to the
// direct kernel call measured in the same run), the goal line (run() adds
// at most 2 us beyond the kernel), and writes the same as JSON:
//
//   {"schema": "fmhajit-bench-api/1", "kernel": ..., "calls": N, "rounds": R,
//    "paths": [{"name": "direct", "ns_per_call": x, "ratio_to_direct": 1},
//    ...], "overhead_ns": y, "goal": {"limit_us": 2, "value_us": y/1000,
//    "status": "pass"|"miss"}}
//
//===----------------------------------------------------------------------===//
#include "bench/api/ApiOverhead.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;
using namespace fmhajit::bench;

static llvm::cl::opt<std::string>
    jsonPath("json", llvm::cl::desc("where to write the JSON"),
             llvm::cl::init("bench-api.json"), llvm::cl::value_desc("path"));
static llvm::cl::opt<bool>
    quick("quick", llvm::cl::desc("fewer calls, for smoke tests"));

/// The goal: run() on a cached plan adds at most this beyond the
/// kernel.
static constexpr double kGoalUs = 2.0;

static void printTable(const OverheadResult &r, llvm::raw_ostream &os) {
  double direct = r.paths.front().nsPerCall;
  os << "kernel   " << r.kernel << " (Sq=1, Sk=16, 1 head, 1 thread)\n"
     << "calls    " << r.calls * r.rounds
     << " per path, each timed alone, paths interleaved\n\n"
     << llvm::format("%-10s %12s %10s\n", "path", "ns/call", "x direct");
  for (const PathTiming &p : r.paths)
    os << llvm::format("%-10s %12.1f %10.2f\n", p.name.c_str(), p.nsPerCall,
                       p.nsPerCall / direct);
  os << "\noverhead " << llvm::format("%.1f ns", r.overheadNs)
     << " per run() beyond the kernel (median of the per-call api - direct)\n"
     << "goal     run() overhead <= " << llvm::format("%.1f us", kGoalUs)
     << ": " << (r.overheadNs <= kGoalUs * 1e3 ? "PASS" : "MISS") << "\n";
}

static llvm::Error writeJson(const OverheadResult &r, llvm::StringRef path) {
  double direct = r.paths.front().nsPerCall;
  llvm::json::Array paths;
  for (const PathTiming &p : r.paths)
    paths.push_back(
        llvm::json::Object{{"name", p.name},
                           {"ns_per_call", p.nsPerCall},
                           {"ratio_to_direct", p.nsPerCall / direct}});
  bool pass = r.overheadNs <= kGoalUs * 1e3;
  llvm::json::Object root{
      {"schema", "fmhajit-bench-api/1"},
      {"kernel", r.kernel},
      {"calls", r.calls},
      {"rounds", r.rounds},
      {"paths", std::move(paths)},
      {"overhead_ns", r.overheadNs},
      {"goal",
       llvm::json::Object{{"name", "api::run overhead beyond the kernel"},
                          {"limit_us", kGoalUs},
                          {"value_us", r.overheadNs / 1e3},
                          {"status", pass ? "pass" : "miss"}}}};
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return makeError(ErrorKind::Io,
                     "cannot write " + path + ": " + ec.message());
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "fmhajit-bench-api: api::run overhead\n");
  OverheadConfig config;
  if (quick)
    config = {2000, 2};
  auto result = measureApiOverhead(config);
  if (!result) {
    for (const std::string &m : takeProblems(result.takeError()).messages)
      llvm::errs() << "error: " << m << "\n";
    return 1;
  }
  printTable(*result, llvm::outs());
  if (llvm::Error err = writeJson(*result, jsonPath)) {
    llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  llvm::outs() << "json     " << jsonPath << "\n";
  return 0;
}
