//===- main.cpp - fmhajit-bench-api: api::run's per-call overhead ---------===//
//
// Prints a table (ns per call of each path, and each as a ratio to the
// direct kernel call measured in the same run), the goal line (run() adds
// at most 2 us beyond the kernel), and writes the same as JSON:
//
//   {"schema": "fmhajit-bench-api/1", "device": "host", "kernel": ...,
//    "calls": N, "rounds": R, "paths": [{"name": "direct", "ns_per_call": x,
//    "ratio_to_direct": 1}, ...], "overhead_ns": y, "goal": {"limit_us": 2,
//    "value_us": y/1000, "status": "pass"|"miss"}}
//
// With --device cuda (CudaOverhead.cpp) the same for each CUDA problem, the
// ratios and the overhead against cuLaunchKernel, the goal the same 2 us:
//
//   {"schema": "fmhajit-bench-api-cuda/1", "device": "cuda", "gpu": ...,
//    "batch": B, "problems": [{"problem": "tiny", "shape": ..., "kernel": ...,
//    "tensor_maps": false, "calls": N, "rounds": R, "max_abs_diff": d,
//    "paths": [{"name": "cuLaunchKernel", "ns_per_call": x,
//    "ratio_to_launch": 1}, ...], "overhead_ns": y, "goal": {...}}, ...]}
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
static llvm::cl::opt<std::string>
    deviceFlag("device",
               llvm::cl::desc("host (the default) or cuda: launches queued on "
                              "the first NVIDIA GPU"),
               llvm::cl::init("host"), llvm::cl::value_desc("host|cuda"));
static llvm::cl::opt<std::string>
    targetFlag("target",
               llvm::cl::desc("with --device cuda: the target to plan for "
                              "(default: the GPU's own, sm_90a on an H100)"),
               llvm::cl::value_desc("target"));

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

static llvm::Error writeJson(const llvm::json::Value &root,
                             llvm::StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return makeError(ErrorKind::Io,
                     "cannot write " + path + ": " + ec.message());
  os << llvm::formatv("{0:2}", root) << "\n";
  return llvm::Error::success();
}

static llvm::json::Object goalJson(const char *name, double overheadNs) {
  return llvm::json::Object{
      {"name", name},
      {"limit_us", kGoalUs},
      {"value_us", overheadNs / 1e3},
      {"status", overheadNs <= kGoalUs * 1e3 ? "pass" : "miss"}};
}

static llvm::json::Value hostJson(const OverheadResult &r) {
  double direct = r.paths.front().nsPerCall;
  llvm::json::Array paths;
  for (const PathTiming &p : r.paths)
    paths.push_back(
        llvm::json::Object{{"name", p.name},
                           {"ns_per_call", p.nsPerCall},
                           {"ratio_to_direct", p.nsPerCall / direct}});
  return llvm::json::Object{
      {"schema", "fmhajit-bench-api/1"},
      {"device", "host"},
      {"kernel", r.kernel},
      {"calls", r.calls},
      {"rounds", r.rounds},
      {"paths", std::move(paths)},
      {"overhead_ns", r.overheadNs},
      {"goal", goalJson("api::run overhead beyond the kernel", r.overheadNs)}};
}

static void printCudaTable(const CudaOverheadReport &report,
                           llvm::raw_ostream &os) {
  os << "gpu      " << report.gpu << "\n"
     << "calls    launches queued on one stream without waiting; host ns per "
        "call, median of samples of "
     << report.batch << " calls, paths interleaved\n";
  for (const OverheadResult &r : report.problems) {
    double launch = r.paths.front().nsPerCall;
    os << "\n"
       << llvm::format("%-8s ", r.problem.c_str()) << r.kernel << " ("
       << r.shape << (r.tensorMaps ? "; 3 TMA tensor maps per launch" : "")
       << ")\n"
       << llvm::format("%-26s %10s %9s\n", "path", "ns/call", "x launch");
    for (const PathTiming &p : r.paths)
      os << llvm::format("%-26s %10.1f %9.2f\n", p.name.c_str(), p.nsPerCall,
                         p.nsPerCall / launch);
    os << llvm::format("overhead %.1f ns", r.overheadNs)
       << " per api::run beyond cuLaunchKernel (median of the per-sample "
          "differences); outputs agree to "
       << llvm::format("%.3g", r.maxAbsDiff) << "\n";
  }
  os << "\ngoal     api::run <= " << llvm::format("%.1f us", kGoalUs)
     << " over cuLaunchKernel:";
  for (const OverheadResult &r : report.problems)
    os << " " << r.problem << llvm::format(" %.2f us ", r.overheadNs / 1e3)
       << (r.overheadNs <= kGoalUs * 1e3 ? "PASS" : "MISS");
  os << "\n";
}

static llvm::json::Value cudaJson(const CudaOverheadReport &report) {
  llvm::json::Array problems;
  for (const OverheadResult &r : report.problems) {
    double launch = r.paths.front().nsPerCall;
    llvm::json::Array paths;
    for (const PathTiming &p : r.paths)
      paths.push_back(
          llvm::json::Object{{"name", p.name},
                             {"ns_per_call", p.nsPerCall},
                             {"ratio_to_launch", p.nsPerCall / launch}});
    problems.push_back(llvm::json::Object{
        {"problem", r.problem},
        {"shape", r.shape},
        {"kernel", r.kernel},
        {"tensor_maps", r.tensorMaps},
        {"calls", r.calls},
        {"rounds", r.rounds},
        {"max_abs_diff", r.maxAbsDiff},
        {"paths", std::move(paths)},
        {"overhead_ns", r.overheadNs},
        {"goal", goalJson("api::run beyond cuLaunchKernel", r.overheadNs)}});
  }
  return llvm::json::Object{{"schema", "fmhajit-bench-api-cuda/1"},
                            {"device", "cuda"},
                            {"gpu", report.gpu},
                            {"batch", report.batch},
                            {"problems", std::move(problems)}};
}

static int fail(llvm::Error err) {
  for (const std::string &m : takeProblems(std::move(err)).messages)
    llvm::errs() << "error: " << m << "\n";
  return 1;
}

// Exactly one "error:" line per problem, and no crash, without a GPU.
static int runCuda() {
  CudaOverheadConfig config;
  if (quick)
    config.batch = 20, config.samples = 5, config.rounds = 2;
  config.target = targetFlag;
  auto report = measureCudaOverhead(config);
  if (!report)
    return fail(report.takeError());
  printCudaTable(*report, llvm::outs());
  if (llvm::Error err = writeJson(cudaJson(*report), jsonPath))
    return fail(std::move(err));
  llvm::outs() << "json     " << jsonPath << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "fmhajit-bench-api: api::run overhead\n");
  if (deviceFlag == "cuda")
    return runCuda();
  if (deviceFlag != "host") {
    llvm::errs() << "error: --device " << deviceFlag << ": use host or cuda\n";
    return 2;
  }
  OverheadConfig config;
  if (quick)
    config = {2000, 2};
  auto result = measureApiOverhead(config);
  if (!result)
    return fail(result.takeError());
  printTable(*result, llvm::outs());
  if (llvm::Error err = writeJson(hostJson(*result), jsonPath))
    return fail(std::move(err));
  llvm::outs() << "json     " << jsonPath << "\n";
  return 0;
}
