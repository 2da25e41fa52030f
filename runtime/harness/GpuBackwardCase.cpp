//===- GpuBackwardCase.cpp - One GPU backward call, checked ---------------===//
#include "runtime/harness/GpuBackwardCase.h"
#include "runtime/numerics/BackwardReference.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include <cmath>
#include <vector>

using namespace fmhajit;
using namespace fmhajit::harness;

GpuBackwardCase::GpuBackwardCase(const KernelSpec &spec,
                                 const AttentionProblem &a)
    : spec(spec), p(a), q(spec.dtype, numElements(a.qShape())),
      k(spec.dtype, numElements(a.kShape())),
      v(spec.dtype, numElements(a.vShape())),
      dO(spec.outType(), numElements(a.oShape())),
      dQ(spec.outType(), numElements(a.qShape())),
      dK(spec.outType(), numElements(a.kShape())),
      dV(spec.outType(), numElements(a.vShape())),
      device(findArch(spec.target)->backend) {}

static llvm::Error failed(const std::string &what, const api::Status &s) {
  return makeError(ErrorKind::Driver, what + ": " + s.message());
}

// Inputs up, outputs and workspaces allocated, in the order the API reads.
llvm::Error GpuBackwardCase::upload(const api::Problem &problem) {
  tensors.q = device.upload(q.data(), q.sizeInBytes(), "q");
  tensors.k = device.upload(k.data(), k.sizeInBytes(), "k");
  tensors.v = device.upload(v.data(), v.sizeInBytes(), "v");
  tensors.dO = device.upload(dO.data(), dO.sizeInBytes(), "dO");
  tensors.o = device.allocate(dO.sizeInBytes(), "o");
  tensors.lse = device.allocate<float>(4 * numElements(p.lseShape()), "lse");
  if (p.isVarlen()) {
    std::vector<int32_t> cuQ = p.cuSeqlensQ(), cuK = p.cuSeqlensK();
    tensors.cuSeqlensQ =
        device.upload<int32_t>(cuQ.data(), 4 * cuQ.size(), "cu_seqlens_q");
    tensors.cuSeqlensK =
        device.upload<int32_t>(cuK.data(), 4 * cuK.size(), "cu_seqlens_k");
  }
  if (spec.bias == Bias::Alibi) {
    std::vector<float> slopes = p.resolvedAlibiSlopes();
    tensors.alibiSlopes =
        device.upload<float>(slopes.data(), 4 * slopes.size(), "slopes");
  }
  tensors.dropout = {p.dropout.p, p.dropout.seed, p.dropout.offset};
  tensors.dQ = device.allocate(dQ.sizeInBytes(), "dQ");
  tensors.dK = device.allocate(dK.sizeInBytes(), "dK");
  tensors.dV = device.allocate(dV.sizeInBytes(), "dV");
  tensors.workspace = device.allocate(
      std::max<int64_t>(backwardPlan.workspaceBytes(), 4), "workspace");
  if (!device.error().empty())
    return makeError(ErrorKind::Driver, device.error());
  return runForward(problem);
}

llvm::Error GpuBackwardCase::runForward(const api::Problem &problem) {
  api::Problem forward = problem;
  forward.wantLse = true;
  auto plan = api::plan(forward);
  if (!plan.ok())
    return failed("the forward's plan", plan.status());
  api::Tensors t;
  t.q = tensors.q, t.k = tensors.k, t.v = tensors.v;
  t.o = const_cast<void *>(tensors.o);
  t.lse = const_cast<float *>(tensors.lse);
  t.cuSeqlensQ = tensors.cuSeqlensQ, t.cuSeqlensK = tensors.cuSeqlensK;
  t.alibiSlopes = tensors.alibiSlopes;
  t.dropout = tensors.dropout;
  t.workspace =
      device.allocate(std::max<int64_t>(plan->workspaceBytes(), 4), "fwd ws");
  api::Status status = api::run(*plan, t);
  return status.ok() ? llvm::Error::success() : failed("the forward", status);
}

llvm::Expected<std::unique_ptr<GpuBackwardCase>>
GpuBackwardCase::make(const KernelSpec &spec, const api::Problem &problem,
                      const AttentionProblem &a, uint64_t seed) {
  if (llvm::Error err = a.validate(spec))
    return std::move(err);
  std::unique_ptr<GpuBackwardCase> c(new GpuBackwardCase(spec, a));
  api::Options options;
  options.kernel = encodeName(spec);
  auto plan = api::planBackward(problem, options);
  if (!plan.ok())
    return failed("the backward's plan", plan.status());
  c->backwardPlan = *plan;
  c->q.fillNormal(seed);
  c->k.fillNormal(seed + 1);
  c->v.fillNormal(seed + 2);
  c->dO.fillNormal(seed + 3);
  if (llvm::Error err = c->upload(problem))
    return std::move(err);
  return std::move(c);
}

llvm::Error GpuBackwardCase::launch() {
  api::Status status = api::backward(backwardPlan, tensors);
  return status.ok() ? llvm::Error::success() : failed("the backward", status);
}

llvm::Error GpuBackwardCase::run() {
  HostTensor *grads[] = {&dQ, &dK, &dV};
  void *targets[] = {tensors.dQ, tensors.dK, tensors.dV};
  for (int i = 0; i < 3; ++i) { // NaN up, so an unwritten element shows
    grads[i]->poison();
    device.refill(targets[i], grads[i]->data(), grads[i]->sizeInBytes());
  }
  if (!device.error().empty())
    return makeError(ErrorKind::Driver, device.error());
  if (llvm::Error err = launch())
    return err;
  for (int i = 0; i < 3; ++i)
    device.download(targets[i], grads[i]->data(), grads[i]->sizeInBytes());
  if (!device.error().empty())
    return makeError(ErrorKind::Driver, device.error());
  return llvm::Error::success();
}

BackwardCheck GpuBackwardCase::check() const {
  ReferenceGrads ref = referenceBackward(spec, p, q.toFloat(), k.toFloat(),
                                         v.toFloat(), dO.toFloat());
  Tolerance tol = backwardToleranceFor(spec.dtype, spec.outType());
  return {compareOutputs(dQ.toFloat(), ref.dq, {}, {}, tol),
          compareOutputs(dK.toFloat(), ref.dk, {}, {}, tol),
          compareOutputs(dV.toFloat(), ref.dv, {}, {}, tol)};
}
