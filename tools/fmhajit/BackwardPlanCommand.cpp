//===- BackwardPlanCommand.cpp - fmhajit plan --backward ------------------===//
//
// The steps of the host backward for a problem given by plan's flags: the
// forward (with LSE) the backward reads, bwd_dot_do_o and bwd_dq_dk_dv, each
// kernel's name and work items, and the workspace. It only chooses; nothing
// is compiled. The backward has no public API yet, so the steps are the ones
// runtime/harness/BackwardCase.h runs.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "runtime/api/ProblemLowering.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/Validate.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/PlanOptions.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

/// The bwd_dq_dk_dv spec of \p p's features for \p target, unresolved.
static KernelSpec gradSpecFor(const api::Problem &p,
                              const std::string &target) {
  KernelSpec s;
  s.family = Family::BwdDqDkDv;
  s.dtype = toDType(p.dtype);
  if (p.outDtype)
    s.out = toDType(*p.outDtype);
  s.d = unsigned(p.headDim);
  s.dv = unsigned(p.headDimV);
  s.mask = toMask(p.mask);
  s.bias = p.alibi ? Bias::Alibi : Bias::None;
  s.softcap = p.softcap > 0;
  s.varlen = !p.cuSeqlensQ.empty() || !p.cuSeqlensK.empty();
  s.target = target;
  return s;
}

/// \p s for \p family with the features that family takes, resolved.
static llvm::Expected<KernelSpec> stepSpec(KernelSpec s, Family family) {
  s.family = family;
  if (family == Family::Fwd) {
    s.lse = true;
  } else if (family == Family::BwdDotDoO) {
    s.mask = Mask::None;
    s.bias = Bias::None;
    s.softcap = false;
  }
  return validateSpec(s);
}

static llvm::Error checkBackwardProblem(const api::Problem &p,
                                        const std::string &target) {
  ErrorList errors;
  const ArchInfo *arch = findArch(target);
  if (p.device != api::Device::Host || (arch && arch->backend != Backend::Host))
    errors.add(ErrorKind::Unsupported,
               "the backward runs on host targets only so far (target " +
                   target + ")");
  if (p.pagesKv.enabled())
    errors.add(ErrorKind::Unsupported,
               "a paged K/V cache: the backward reads dense K and V");
  return errors.take();
}

/// The longest sequence of cumulative lengths \p cu, or \p dense without.
static int64_t longest(const std::vector<int32_t> &cu, int64_t dense) {
  int64_t most = cu.empty() ? dense : 0;
  for (size_t i = 1; i < cu.size(); ++i)
    most = std::max<int64_t>(most, cu[i] - cu[i - 1]);
  return most;
}

/// All rows of cumulative lengths \p cu, or \p dense without.
static int64_t totalRows(const std::vector<int32_t> &cu, int64_t dense) {
  return cu.empty() ? dense : cu.back();
}

static void printSteps(const KernelSpec &fwd, const KernelSpec &dot,
                       const KernelSpec &grad, const api::Problem &p) {
  int64_t headsKv = p.headsKv ? p.headsKv : p.headsQ;
  int64_t sq = longest(p.cuSeqlensQ, p.seqlenQ);
  int64_t sk = longest(p.cuSeqlensK.empty() ? p.cuSeqlensQ : p.cuSeqlensK,
                       p.seqlenK ? p.seqlenK : p.seqlenQ);
  auto queryItems = [&](const KernelSpec &s) {
    int64_t tiles = (sq + s.bm - 1) / s.bm;
    return std::pair{tiles, p.batch * p.headsQ * tiles};
  };
  llvm::raw_ostream &os = llvm::outs();
  auto [fwdTiles, fwdItems] = queryItems(fwd);
  os << "step 1     forward " << encodeName(fwd) << " (O and LSE)\n"
     << llvm::formatv("  grid       {0} x {1} x {2} (batch x heads_q x query "
                      "tiles of {3}) = {4} work items\n",
                      p.batch, p.headsQ, fwdTiles, fwd.bm, fwdItems);
  auto [dotTiles, dotItems] = queryItems(dot);
  os << "step 2     bwd_dot_do_o " << encodeName(dot)
     << " (D = rowsum(dO * O))\n"
     << llvm::formatv("  grid       {0} x {1} x {2} (batch x heads_q x query "
                      "tiles of {3}) = {4} work items\n",
                      p.batch, p.headsQ, dotTiles, dot.bm, dotItems);
  auto [qTiles, qItems] = queryItems(grad);
  int64_t kItems = bwdKeyItems(grad, p.batch, headsKv, sk);
  os << "step 3     bwd_dq_dk_dv " << encodeName(grad) << "\n"
     << llvm::formatv("  grid       {0} x {1} x {2} (batch x heads_kv x key "
                      "tiles of {3}) = {4} key items (dK, dV)\n",
                      p.batch, headsKv, kItems / (p.batch * headsKv), grad.bn,
                      kItems)
     << llvm::formatv("             + {0} x {1} x {2} (batch x heads_q x "
                      "query tiles of {3}) = {4} query items (dQ) = {5} work "
                      "items\n",
                      p.batch, p.headsQ, qTiles, grad.bm, qItems,
                      kItems + qItems);
  os << llvm::formatv("workspace  {0} bytes: D, fp32, laid out like the LSE; "
                      "no fp32 dQ accumulator (each query item finishes its "
                      "dQ)\n",
                      4 * p.headsQ * totalRows(p.cuSeqlensQ, p.batch * sq));
  os << "deterministic yes: every dQ, dK and dV element has one writer\n";
}

int fmhajit::planBackward(const PlanRequest &request) {
  const api::Problem &p = request.problem;
  std::string target =
      request.options.target.empty() ? "host" : request.options.target;
  if (llvm::Error err = checkBackwardProblem(p, target))
    return reportErrors(std::move(err));
  KernelSpec base = gradSpecFor(p, target);
  // The gradient kernel first: its errors name the problem's features once.
  auto grad = stepSpec(base, Family::BwdDqDkDv);
  if (!grad)
    return reportErrors(grad.takeError());
  auto fwd = stepSpec(base, Family::Fwd);
  if (!fwd)
    return reportErrors(fwd.takeError());
  auto dot = stepSpec(base, Family::BwdDotDoO);
  if (!dot)
    return reportErrors(dot.takeError());
  llvm::outs() << "backward plan for target " << target << " (device host)\n";
  int64_t sq = longest(p.cuSeqlensQ, p.seqlenQ);
  int64_t sk = longest(p.cuSeqlensK.empty() ? p.cuSeqlensQ : p.cuSeqlensK,
                       p.seqlenK ? p.seqlenK : p.seqlenQ);
  llvm::outs() << llvm::formatv(
      "problem    batch {0}, heads {1} q / {2} kv, seqlen q {3} / k {4}{12}, "
      "d {5} / dv {6}, {7} -> {8}, mask {9}{10}{11}\n",
      p.batch, p.headsQ, p.headsKv ? p.headsKv : p.headsQ, sq, sk, grad->d,
      grad->headDimV(), keyOf(grad->dtype), keyOf(grad->outType()),
      keyOf(grad->mask), p.alibi ? ", alibi" : "",
      p.softcap > 0 ? ", softcap" : "",
      grad->varlen ? " (varlen: the longest)" : "");
  printSteps(*fwd, *dot, *grad, p);
  llvm::outs().flush();
  return 0;
}
