//===- BackwardCase.cpp - One backward call on seeded inputs, checked -----===//
#include "runtime/harness/BackwardCase.h"
#include "runtime/harness/BundleMeta.h"
#include "runtime/numerics/BackwardReference.h"
#include "runtime/numerics/Reference.h"
#include "runtime/numerics/RunBundle.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/Validate.h"
#include <algorithm>
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::harness;

AttentionProblem fmhajit::harness::backwardProblem(const KernelSpec &spec,
                                                   const api::Problem &p) {
  AttentionProblem a = AttentionProblem::forSpec(spec);
  a.batch = p.batch;
  a.headsQ = p.headsQ;
  a.headsKv = p.headsKv ? p.headsKv : p.headsQ;
  a.seqlenQ = p.seqlenQ;
  a.seqlenK = p.seqlenK ? p.seqlenK : p.seqlenQ;
  a.scale = p.scale;
  a.softcap = spec.softcap ? p.softcap : 0;
  if (spec.mask == Mask::Window) {
    a.windowLeft = p.windowLeft;
    a.windowRight = p.windowRight;
  }
  a.alibiSlopes = p.alibiSlopes;
  // --varlen-q/k arrive cumulative; the problem takes lengths.
  auto lengths = [](const std::vector<int32_t> &cu) {
    std::vector<int64_t> lens;
    for (size_t i = 1; i < cu.size(); ++i)
      lens.push_back(cu[i] - cu[i - 1]);
    return lens;
  };
  if (!p.cuSeqlensQ.empty() || !p.cuSeqlensK.empty()) {
    a.seqlensQ = lengths(p.cuSeqlensQ);
    a.seqlensK = p.cuSeqlensK.empty() ? a.seqlensQ : lengths(p.cuSeqlensK);
    a.batch = int64_t(a.seqlensQ.size());
  }
  return a;
}

std::string BackwardCheck::summary() const {
  return "dq " + dq.summary() + "; dk " + dk.summary() + "; dv " + dv.summary();
}

/// A gradient-like tensor of \p spec's out dtype and \p shape in \p layout.
static LaidOutTensor laidOut(const KernelSpec &spec,
                             const api::TensorLayout &layout,
                             const TensorShape &shape) {
  return LaidOutTensor(spec.outType(), shape, resolveStrides(layout, shape));
}

TensorShape BackwardCase::shapeOf(bool queries, int64_t dim) const {
  int64_t heads = queries ? p.headsQ : p.headsKv;
  if (p.isVarlen())
    return {1, queries ? p.totalQ() : p.totalK(), heads, dim, true};
  return {p.batch, queries ? p.seqlenQ : p.seqlenK, heads, dim};
}

BackwardCase::BackwardCase(const AttentionProblem &problem,
                           HostKernel forwardKernel, HostKernel dotKernel,
                           HostKernel gradKernel, unsigned threads,
                           const api::TensorLayout &gradLayout)
    : p(problem), forward(std::move(forwardKernel)), dot(std::move(dotKernel)),
      grad(std::move(gradKernel)), executor(threads),
      q(grad.spec().dtype, numElements(p.qShape())),
      k(grad.spec().dtype, numElements(p.kShape())),
      v(grad.spec().dtype, numElements(p.vShape())),
      out(grad.spec().outType(), numElements(p.oShape())),
      dO(laidOut(grad.spec(), gradLayout, shapeOf(true, p.dv))),
      dQ(laidOut(grad.spec(), gradLayout, shapeOf(true, p.d))),
      dK(laidOut(grad.spec(), gradLayout, shapeOf(false, p.d))),
      dV(laidOut(grad.spec(), gradLayout, shapeOf(false, p.dv))),
      lseRows(numElements(p.lseShape())), dsum(numElements(p.lseShape())) {
  if (bwdSumsDqInWorkspace(grad.spec()))
    dqAccum.resize(size_t(numElements(p.qShape())));
  if (grad.spec().bias == Bias::Alibi)
    slopes = p.resolvedAlibiSlopes();
  if (p.isVarlen()) {
    cuQ = p.cuSeqlensQ();
    cuK = p.cuSeqlensK();
  }
}

/// \p spec with \p family, the features it takes from a backward spec, and
/// the target's default tile, resolved.
static llvm::Expected<KernelSpec> companionSpec(const KernelSpec &spec,
                                                Family family) {
  KernelSpec s = spec;
  s.family = family;
  s.bm = s.bn = s.warps = s.stages = 0;
  s.pipeline = Pipeline::Auto;
  s.head_items = false;
  if (family == Family::Fwd) {
    s.lse = true;
  } else {
    s.mask = Mask::None;
    s.bias = Bias::None;
    s.softcap = s.dropout = false;
  }
  return validateSpec(s);
}

llvm::Expected<std::unique_ptr<BackwardCase>>
BackwardCase::make(const KernelSpec &spec, const AttentionProblem &problem,
                   uint64_t seed, KernelCache &cache, unsigned threads,
                   const api::TensorLayout &gradLayout) {
  if (spec.family != Family::BwdDqDkDv)
    return makeError(ErrorKind::Usage,
                     "family " + keyOf(spec.family) +
                         " runs as a step of the backward: run "
                         "family=bwd_dq_dk_dv, which runs bwd_dot_do_o first");
  if (llvm::Error err = problem.validate(spec))
    return std::move(err);
  auto fwdSpec = companionSpec(spec, Family::Fwd);
  if (!fwdSpec)
    return fwdSpec.takeError();
  auto dotSpec = companionSpec(spec, Family::BwdDotDoO);
  if (!dotSpec)
    return dotSpec.takeError();
  auto fwd = HostKernel::load(*fwdSpec, cache);
  if (!fwd)
    return fwd.takeError();
  auto dot = HostKernel::load(*dotSpec, cache);
  if (!dot)
    return dot.takeError();
  auto grad = HostKernel::load(spec, cache);
  if (!grad)
    return grad.takeError();
  std::unique_ptr<BackwardCase> c(
      new BackwardCase(problem, *fwd, *dot, *grad, threads, gradLayout));
  c->seed = seed;
  c->q.fillNormal(seed);
  c->k.fillNormal(seed + 1);
  c->v.fillNormal(seed + 2);
  c->dO.data.fillNormal(seed + 3);
  c->out.poison();
  std::fill(c->lseRows.begin(), c->lseRows.end(), NAN);
  c->forward.run(c->argsFor(c->forward.spec()), c->executor);
  return std::move(c);
}

KernelArgs BackwardCase::argsFor(const KernelSpec &spec) {
  ForwardBuffers buffers{q.data(),
                         k.data(),
                         v.data(),
                         out.data(),
                         lseRows.data(),
                         cuQ.empty() ? nullptr : cuQ.data(),
                         cuK.empty() ? nullptr : cuK.data(),
                         slopes.empty() ? nullptr : slopes.data()};
  ForwardStrides strides = ForwardStrides::packed(spec, p);
  KernelArgs args = makeKernelArgs(spec, p, buffers, strides);
  args.dO = dO.data.data();
  args.dQ = dQ.data.data();
  args.dK = dK.data.data();
  args.dV = dV.data.data();
  args.dPsum = dsum.data();
  // Packed [batch, seqlenQ, headsQ, d] (or THD), as a GPU plan's workspace.
  args.dQAccum = dqAccum.empty() ? nullptr : dqAccum.data();
  args.dQAccumStrides = {p.maxSeqlenQ() * p.headsQ * p.d, p.headsQ * p.d, p.d};
  args.dOStrides = dO.strides;
  args.dQStrides = dQ.strides;
  args.dKStrides = dK.strides;
  args.dVStrides = dV.strides;
  return args;
}

void BackwardCase::run() {
  std::fill(dsum.begin(), dsum.end(), NAN);
  std::fill(dqAccum.begin(), dqAccum.end(), NAN);
  dQ.data.poison();
  dK.data.poison();
  dV.data.poison();
  launch();
}

void BackwardCase::launch() {
  dot.run(argsFor(dot.spec()), executor);
  grad.run(argsFor(grad.spec()), executor);
}

BackwardCheck BackwardCase::check() const {
  ReferenceGrads ref = referenceBackward(grad.spec(), p, q.toFloat(),
                                         k.toFloat(), v.toFloat(), dO.packed());
  Tolerance tol =
      backwardToleranceFor(grad.spec().dtype, grad.spec().outType());
  return {compareOutputs(dQ.packed(), ref.dq, {}, {}, tol),
          compareOutputs(dK.packed(), ref.dk, {}, {}, tol),
          compareOutputs(dV.packed(), ref.dv, {}, {}, tol)};
}

llvm::Error BackwardCase::save(const std::string &dir) const {
  std::vector<float> qf = q.toFloat(), kf = k.toFloat(), vf = v.toFloat(),
                     of = out.toFloat(), dOf = dO.packed(), dQf = dQ.packed(),
                     dKf = dK.packed(), dVf = dV.packed();
  std::vector<BundleArray> arrays = {
      {"q.npy", qf, p.qShape()},          {"k.npy", kf, p.kShape()},
      {"v.npy", vf, p.vShape()},          {"o.npy", of, p.oShape()},
      {"lse.npy", lseRows, p.lseShape()}, {"do.npy", dOf, p.oShape()},
      {"dq.npy", dQf, p.qShape()},        {"dk.npy", dKf, p.kShape()},
      {"dv.npy", dVf, p.vShape()}};
  // The forward bundle's keys in its order (RunBundle.h), then ours.
  llvm::json::Object common = runMetadata(grad.spec(), p);
  BundleMeta meta;
  for (const char *key :
       {"spec", "name", "dtype", "mask", "heads_q", "heads_kv", "scale",
        "softcap", "window_left", "window_right", "alibi_slopes",
        "cu_seqlens_q", "cu_seqlens_k", "dropout"})
    meta.emplace_back(key, *common.get(key));
  meta.emplace_back("out", keyOf(grad.spec().outType()));
  meta.emplace_back("batch", p.batch);
  meta.emplace_back("seqlen_q", p.maxSeqlenQ());
  meta.emplace_back("seqlen_k", p.maxSeqlenK());
  meta.emplace_back("forward", encodeName(forward.spec()));
  meta.emplace_back("dot_do_o", encodeName(dot.spec()));
  meta.emplace_back("seed", static_cast<int64_t>(seed));
  return writeBundle(dir, arrays, meta);
}

double BackwardCase::flops() const { return backwardFlops(grad.spec(), p); }

double fmhajit::harness::backwardFlops(const KernelSpec &spec,
                                       const AttentionProblem &p) {
  double pairs = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t sq = p.seqlenQOf(b), sk = p.seqlenKOf(b);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j)
        pairs += isKeyVisible(spec, p, i, j, sq, sk);
  }
  double forwardFlops = 2.0 * double(p.d + p.dv) * pairs * double(p.headsQ);
  return 2.5 * forwardFlops;
}
