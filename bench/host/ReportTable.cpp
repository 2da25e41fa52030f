//===- ReportTable.cpp - The bench's tables, printed as it goes -----------===//
#include "bench/host/BenchReport.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace fmhajit;
using namespace fmhajit::bench;

static const char *dtypeText(DType t) {
  return t == DType::F32 ? "fp32" : "bf16";
}

void fmhajit::bench::printPeaks(llvm::raw_ostream &os,
                                const BenchReport &report) {
  os << "FMA peak (independent FMA chains, best of repeats):\n";
  for (const FmaPeak &p : report.peaks) {
    if (!p.widthBits) {
      os << "  no FMA instructions on this CPU: fractions of peak are not "
            "reported\n";
      continue;
    }
    os << llvm::format(
        "  %2u thread%s  %8.1f GFLOPS  (%u-bit, %u chains per thread)\n",
        p.threads, p.threads == 1 ? " " : "s", p.gflops, p.widthBits,
        p.accumulators);
  }
}

void fmhajit::bench::printForwardHeader(llvm::raw_ostream &os) {
  os << "Forward throughput: batch 1, Sq = Sk = S, heads = max(1, "
     << kTokensPerCase << "/S); FLOPs 4*B*H*S*S*d, halved for causal.\n"
     << "ms: best of the runs for both (the JSON also has the medians);\n"
     << "%peak: of the FMA peak at the same thread count, the higher of the "
        "one above and one\n"
     << "  timed in the row's turns (its GFLOPS in the peak column); speedup: "
        "peer time / fmhajit\n"
     << "  time;\n"
     << "relL2: fmhajit's O against the peer's O on the same inputs.\n"
     << "dtype   d     S mask   thr heads | fmhajit ms  GFLOPS  %peak |  peer "
        "ms  GFLOPS  "
        "%peak mode   | speedup   relL2  check |  peak\n";
}

void fmhajit::bench::printForwardRow(llvm::raw_ostream &os,
                                     const ForwardResult &r,
                                     const BenchReport &report) {
  const ForwardCase &c = r.config;
  os << llvm::format("%-5s %3u %5lld %-6s %3u %5lld | ", dtypeText(c.dtype),
                     c.d, (long long)c.seqlen, c.causal ? "causal" : "none",
                     c.threads, (long long)c.heads);
  if (!r.error.empty()) {
    os << "error: " << r.error << "\n";
    return;
  }
  double fg = r.fmhajitGflops(), pg = r.peerGflops();
  os << llvm::format(
      "%10.2f %7.1f %5.1f%% | %8.2f %7.1f %5.1f%% %-6s | %6.2fx %7.1e  %-4s | "
      "%5.1f\n",
      r.fmhajit.bestSeconds * 1e3, fg, 100 * report.fractionOfPeak(r, fg),
      r.peer.bestSeconds * 1e3, pg, 100 * report.fractionOfPeak(r, pg),
      threadingName(r.peerMode).str().c_str(), r.speedup(), r.relL2,
      r.checked ? "ok" : "FAIL", report.peakGflops(r));
}

void fmhajit::bench::printCompileLatency(llvm::raw_ostream &os,
                                         const BenchReport &report) {
  os << "Compile latency (fresh temporary cache directory):\n";
  if (!report.compile) {
    os << "  error: " << report.compileError << "\n";
    return;
  }
  const CompileLatency &c = *report.compile;
  os << llvm::format("  cold       %9.2f ms  median of %zu specs (spec -> "
                     "callable; first also "
                     "creates the JIT)\n",
                     c.coldMedianMs, c.coldMs.size())
     << llvm::format(
            "  memory hit %9.3f us  median of %u (validateSpec %.3f us + "
            "HostKernel::load %.3f us)\n",
            c.memoryHitMedianUs, c.memoryHitRuns, c.memoryHitValidateUs,
            c.memoryHitLoadUs)
     << llvm::format("  disk hit   %9.2f ms  median of %zu fresh `fmhajit run` "
                     "processes (its "
                     "`load` line)\n",
                     c.diskHitMedianMs, c.diskHitMs.size())
     << "  cold vs disk hit: "
     << llvm::format("%.0fx", c.coldMedianMs / c.diskHitMedianMs)
     << ", cold vs memory hit: "
     << llvm::format("%.0fx", c.coldMedianMs * 1e3 / c.memoryHitMedianUs)
     << "\n";
}

static std::string valueText(double value, llvm::StringRef unit) {
  if (unit.empty())
    return llvm::formatv("{0:F1}%", value * 100).str();
  return llvm::formatv(unit == "x" ? "{0:F2}{1}" : "{0:F3} {1}", value, unit)
      .str();
}

void fmhajit::bench::printGoals(llvm::raw_ostream &os,
                                const std::vector<Goal> &goals) {
  os << "Goals (issue 3):\n";
  for (const Goal &g : goals) {
    std::string limit = (g.atMost        ? "<= "
                         : g.unit == "x" ? "> "
                                         : ">= ") +
                        valueText(g.limit, g.unit);
    std::string value = g.value ? valueText(*g.value, g.unit) : "not measured";
    const char *status = !g.value ? "n/a " : g.pass ? "PASS" : "MISS";
    os << llvm::format("  %s  %-64s %14s  (goal %s)", status, g.name.c_str(),
                       value.c_str(), limit.c_str());
    if (!g.note.empty())
      os << "  " << g.note;
    os << "\n";
  }
}
