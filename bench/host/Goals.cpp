//===- Goals.cpp - The issue's goals, judged on one run -------------------===//
#include "bench/host/BenchReport.h"
#include <algorithm>

using namespace fmhajit;
using namespace fmhajit::bench;

const FmaPeak *BenchReport::peakFor(unsigned threads) const {
  for (const FmaPeak &peak : peaks)
    if (peak.threads == threads && peak.gflops > 0)
      return &peak;
  return nullptr;
}

double BenchReport::peakGflops(const ForwardResult &row) const {
  const FmaPeak *runPeak = peakFor(row.config.threads);
  return std::max(row.peakGflops, runPeak ? runPeak->gflops : 0.0);
}

double BenchReport::fractionOfPeak(const ForwardResult &row,
                                   double gflops) const {
  double peak = peakGflops(row);
  return peak > 0 ? gflops / peak : 0;
}

static Goal makeGoal(std::string name, std::string unit, bool atMost,
                     double limit) {
  Goal goal;
  goal.name = std::move(name);
  goal.unit = std::move(unit);
  goal.atMost = atMost;
  goal.limit = limit;
  return goal;
}

static void judge(Goal &goal, double value) {
  goal.value = value;
  goal.pass = goal.atMost ? value <= goal.limit
                          : (goal.unit == "x" ? value > goal.limit
                                              : value >= goal.limit);
}

static const ForwardResult *goalCase(const BenchReport &report) {
  for (const ForwardResult &r : report.forward) {
    const ForwardCase &c = r.config;
    if (c.dtype == DType::F32 && c.d == 128 && c.seqlen == 2048 && !c.causal &&
        c.threads == 1 && r.error.empty())
      return &r;
  }
  return nullptr;
}

std::vector<Goal> fmhajit::bench::evaluateGoals(const BenchReport &report) {
  Goal peak =
      makeGoal("fp32 d=128 S=2048 no mask, 1 thread: fraction of FMA peak", "",
               false, 0.60);
  Goal peer = makeGoal(
      "fp32 d=128 S=2048 no mask, 1 thread: speedup over OpenBLAS peer", "x",
      false, 1.0);
  if (const ForwardResult *r = goalCase(report)) {
    judge(peak, report.fractionOfPeak(*r, r->fmhajitGflops()));
    judge(peer, r->speedup());
    for (Goal *g : {&peak, &peer})
      if (!r->checked) {
        g->pass = false;
        g->note = "outputs disagree with the peer";
      }
  }
  Goal cold =
      makeGoal("compile latency: cold (spec -> callable)", "ms", true, 150);
  Goal memory = makeGoal("compile latency: memory hit", "us", true, 5);
  Goal disk =
      makeGoal("compile latency: disk hit, fresh process", "ms", true, 5);
  if (report.compile) {
    judge(cold, report.compile->coldMedianMs);
    judge(memory, report.compile->memoryHitMedianUs);
    judge(disk, report.compile->diskHitMedianMs);
  }
  return {peak, peer, cold, memory, disk};
}
