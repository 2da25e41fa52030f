//===- HostBackwardStep.cpp - A backward plan's launches on the host ------===//
#include "runtime/api/HostBackwardStep.h"
#include <vector>

using namespace fmhajit;

// The gradients are laid out like the tensors they belong to, so their
// strides are the bound ones of O (dO), Q, K and V.
KernelArgs HostBackwardStep::bind(const HostBinding &binding,
                                  const api::BackwardTensors &t,
                                  void *space) const {
  api::Tensors forward;
  forward.q = t.q, forward.k = t.k, forward.v = t.v;
  forward.o = const_cast<void *>(t.o); // read only: the kernels never write O
  forward.lse = const_cast<float *>(t.lse);
  forward.cuSeqlensQ = t.cuSeqlensQ, forward.cuSeqlensK = t.cuSeqlensK;
  forward.alibiSlopes = t.alibiSlopes;
  forward.dropout = t.dropout;
  KernelArgs p = binding.bind(forward);
  p.dO = t.dO, p.dQ = t.dQ, p.dK = t.dK, p.dV = t.dV;
  p.dOStrides = p.oStrides, p.dQStrides = p.qStrides;
  p.dKStrides = p.kStrides, p.dVStrides = p.vStrides;
  workspace.bind(p, space);
  return p;
}

llvm::Error HostBackwardStep::run(const api::BackwardTensors &t) const {
  void *space = t.workspace;
  if (!space) { // the calling thread's own, kept for its next call
    thread_local std::vector<float> buffer;
    size_t floats = size_t(workspace.hostBytes() + 3) / 4;
    if (buffer.size() < floats)
      buffer.resize(floats);
    space = buffer.data();
  }
  dot.run(bind(dotBinding, t, space), *executor);
  grad.run(bind(gradBinding, t, space), *executor);
  return llvm::Error::success();
}
