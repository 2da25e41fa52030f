//===- PlanDescribe.cpp - Plans and problems as text ----------------------===//
#include "runtime/api/PlanDescribe.h"
#include "specs/Keys.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

static std::string lengths(const AttentionProblem &a) {
  if (!a.isVarlen())
    return "seqlen q " + std::to_string(a.seqlenQ) + " / k " +
           std::to_string(a.seqlenK);
  return "varlen (longest q " + std::to_string(a.maxSeqlenQ()) + " / k " +
         std::to_string(a.maxSeqlenK()) + ", total q " +
         std::to_string(a.totalQ()) + " / k " + std::to_string(a.totalK()) +
         ")";
}

static std::string heads(const AttentionProblem &a) {
  std::string text = "heads " + std::to_string(a.headsQ) + " q / " +
                     std::to_string(a.headsKv) + " kv";
  if (a.headsQ == a.headsKv)
    return text;
  return text + (a.headsKv == 1
                     ? " (MQA)"
                     : " (GQA " + std::to_string(a.headsQ / a.headsKv) + ":1)");
}

static std::string modifiers(const LoweredProblem &l) {
  const KernelSpec &f = l.features;
  std::string text = "mask " + keyOf(f.mask).str();
  if (f.mask == Mask::Window)
    text += " (" + std::to_string(l.problem.windowLeft) + ", " +
            std::to_string(l.problem.windowRight) + ")";
  char scale[32];
  snprintf(scale, sizeof(scale), "%g", l.problem.resolvedScale());
  text += std::string(", scale ") + scale;
  if (f.softcap) {
    snprintf(scale, sizeof(scale), "%g", l.problem.softcap);
    text += std::string(", softcap ") + scale;
  }
  if (f.bias == Bias::Alibi)
    text += ", alibi";
  if (f.lse)
    text += ", lse";
  return text;
}

static std::string pagedLengths(const LoweredProblem &l) {
  const KvCacheLayout &c = *l.pagedCache;
  return "seqlen q " + std::to_string(l.problem.seqlenQ) +
         " / k per sequence (longest " + std::to_string(l.problem.seqlenK) +
         "), paged K/V: " + std::to_string(c.numPages) + " pages of " +
         std::to_string(c.pageSize) + " rows, up to " +
         std::to_string(c.maxPagesPerSeq) + " per sequence";
}

std::string fmhajit::describeProblem(const LoweredProblem &l) {
  const AttentionProblem &a = l.problem;
  const KernelSpec &f = l.features;
  return "batch " + std::to_string(a.batch) + ", " + heads(a) + ", " +
         (l.pagedCache ? pagedLengths(l) : lengths(a)) + ", d " +
         std::to_string(f.d) + " / dv " + std::to_string(f.headDimV()) + ", " +
         keyOf(f.dtype).str() + " -> " + keyOf(f.outType()).str() + ", " +
         modifiers(l) + ", layouts q " + layoutName(l.qLayout) + " k " +
         layoutName(l.kLayout) + " v " + layoutName(l.vLayout) + " o " +
         layoutName(l.oLayout);
}

// Where a loaded step's code came from and what it cost; the steps of a
// plan load side by side (compiler/Concurrently.h), so these overlap.
static std::string describeLoad(const api::StepLoad &l, api::Device device) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << l.origin << ": codegen " << llvm::format("%.1f", l.codegenMs) << " ms";
  if (device != api::Device::Host)
    os << " + driver " << llvm::format("%.1f", l.driverMs) << " ms, "
       << l.registers << " registers, " << l.localBytes << " B local";
  return text;
}

std::string fmhajit::describePlan(const api::detail::PlanState &s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "plan for target " << s.target << " (device " << deviceName(s.device)
     << ")\n"
     << "problem    " << s.problemText << "\n";
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const api::PlanStep &step = s.steps[i];
    os << "step " << i + 1 << "     " << step.role << " " << step.kernel << "\n"
       << "  grid       " << step.grid << " = " << step.workItems
       << (step.workItems == 1 ? " work item\n" : " work items\n")
       << "  workspace  " << step.workspaceBytes << " bytes";
    if (step.workspaceBytes)
      os << " at offset " << step.workspaceOffset;
    os << "\n  why        " << step.why << "\n";
    if (!step.load.origin.empty())
      os << "  load       " << describeLoad(step.load, s.device) << "\n";
  }
  os << "workspace  " << s.workspaceBytes << " bytes\n"
     << "dispatch\n";
  for (const std::string &d : s.decisions)
    os << "  " << d << "\n";
  if (!s.timings.empty()) {
    os << "autotune   (median ms per call, fastest first)\n";
    for (const api::CandidateTiming &t : s.timings)
      os << "  " << llvm::format("%10.4f", t.ms) << "  " << t.kernel << "\n";
  }
  os << "kernels    " << s.loadText << "\n";
  return text;
}
