//===- ReportJson.cpp - The bench's figures as JSON (docs/bench.md) -------===//
#include "bench/host/BenchReport.h"
#include "specs/Errors.h"
#include "specs/Version.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::bench;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

// JSON has no infinities or NaNs: those become null.
static Value finiteOrNull(double v) {
  return std::isfinite(v) ? Value(v) : Value(nullptr);
}

static Value numbers(const std::vector<double> &values) {
  Array out;
  for (double v : values)
    out.push_back(v);
  return Value(std::move(out));
}

static Value peaksJson(const BenchReport &report) {
  Array out;
  for (const FmaPeak &p : report.peaks)
    out.push_back(Object{{"threads", p.threads},
                         {"width_bits", p.widthBits},
                         {"accumulators", p.accumulators},
                         {"repeats", p.repeats},
                         {"gflops", p.gflops}});
  return Value(std::move(out));
}

static Object timingJson(const Timing &t, double gflops, double fraction) {
  return Object{{"ms", t.bestSeconds * 1e3},
                {"median_ms", t.medianSeconds * 1e3},
                {"runs", t.runs},
                {"gflops", gflops},
                {"fraction_of_peak", fraction}};
}

static Value forwardJson(const ForwardResult &r, const BenchReport &report) {
  const ForwardCase &c = r.config;
  Object o{{"dtype", c.dtype == DType::F32 ? "fp32" : "bf16"},
           {"d", c.d},
           {"seqlen", c.seqlen},
           {"mask", c.causal ? "causal" : "none"},
           {"batch", c.batch},
           {"heads", c.heads},
           {"threads", c.threads},
           {"flops", c.flops()}};
  if (!r.error.empty()) {
    o["error"] = r.error;
    return Value(std::move(o));
  }
  Object fmhajit = timingJson(r.fmhajit, r.fmhajitGflops(),
                              report.fractionOfPeak(r, r.fmhajitGflops()));
  fmhajit["kernel"] = r.kernel;
  Object peer = timingJson(r.peer, r.peerGflops(),
                           report.fractionOfPeak(r, r.peerGflops()));
  peer["threading"] = threadingName(r.peerMode);
  if (r.peerOtherSeconds > 0)
    peer["other_threading_ms"] = r.peerOtherSeconds * 1e3;
  o["fmhajit"] = std::move(fmhajit);
  o["peer"] = std::move(peer);
  o["speedup"] = finiteOrNull(r.speedup());
  o["peak_gflops"] = report.peakGflops(r);
  o["peak_gflops_in_turns"] = r.peakGflops;
  o["check"] = Object{{"rel_l2", finiteOrNull(r.relL2)},
                      {"tolerance", r.tolerance},
                      {"pass", r.checked}};
  return Value(std::move(o));
}

static Value compileJson(const BenchReport &report) {
  if (!report.compile)
    return Object{{"error", report.compileError}};
  const CompileLatency &c = *report.compile;
  Array specs;
  for (const std::string &s : c.specs)
    specs.push_back(s);
  return Object{
      {"cold", Object{{"median_ms", c.coldMedianMs},
                      {"ms", numbers(c.coldMs)},
                      {"specs", std::move(specs)}}},
      {"memory_hit", Object{{"median_us", c.memoryHitMedianUs},
                            {"validate_median_us", c.memoryHitValidateUs},
                            {"load_median_us", c.memoryHitLoadUs},
                            {"runs", c.memoryHitRuns}}},
      {"disk_hit", Object{{"median_ms", c.diskHitMedianMs},
                          {"ms", numbers(c.diskHitMs)},
                          {"process_ms", numbers(c.diskProcessMs)},
                          {"spec", c.diskSpec}}}};
}

static Value goalsJson(const std::vector<Goal> &goals) {
  Array out;
  for (const Goal &g : goals) {
    Object o{{"name", g.name},
             {"unit", g.unit},
             {"comparison", g.atMost        ? "<="
                            : g.unit == "x" ? ">"
                                            : ">="},
             {"limit", g.limit},
             {"value", g.value ? Value(*g.value) : Value(nullptr)},
             {"status", !g.value ? "n/a"
                        : g.pass ? "PASS"
                                 : "MISS"}};
    if (!g.note.empty())
      o["note"] = g.note;
    out.push_back(std::move(o));
  }
  return Value(std::move(out));
}

llvm::Error fmhajit::bench::writeJsonReport(const BenchReport &report,
                                            const std::vector<Goal> &goals,
                                            llvm::StringRef path) {
  Array forward;
  for (const ForwardResult &r : report.forward)
    forward.push_back(forwardJson(r, report));
  Value root = Object{
      {"schema", "fmhajit-bench-host/1"},
      {"fmhajit_version", FMHAJIT_VERSION},
      {"llvm_version", LLVM_VERSION_STRING},
      {"quick", report.quick},
      {"machine", Object{{"cpu", report.cpu}, {"threads", report.allThreads}}},
      {"total_seconds", report.totalSeconds},
      {"fma_peak", peaksJson(report)},
      {"forward", std::move(forward)},
      {"compile", compileJson(report)},
      {"goals", goalsJson(goals)}};
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return makeError(ErrorKind::Io,
                     "cannot write " + path + ": " + ec.message());
  out << llvm::formatv("{0:2}", root) << "\n";
  out.close();
  if (out.has_error())
    return makeError(ErrorKind::Io,
                     "cannot write " + path + ": " + out.error().message());
  return llvm::Error::success();
}
