//===- HostKernel.h - A compiled, loaded host forward kernel --------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "ir/KernelAbi.h"
#include "runtime/numerics/AttentionProblem.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

class HostExecutor;

/// The device pointers (host memory here) of one forward call.
struct ForwardBuffers {
  const void *q, *k, *v;
  void *o;
  float *lse = nullptr;                ///< when spec.lse
  const int32_t *cuSeqlensQ = nullptr; ///< under varlen
  const int32_t *cuSeqlensK = nullptr;
  const float *alibiSlopes = nullptr; ///< when bias=alibi
  const float *sinks = nullptr;       ///< when sink=1
  const float *bias = nullptr;        ///< when bias=elementwise
  VariantTensors variantTensors{};    ///< what the variant reads, if any
};

/// Element strides of Q, K, V and O; the last dim is always contiguous.
/// Under bias=elementwise also the bias's: between sequences (batch),
/// queries (row) and query heads (head), and between keys.
struct ForwardStrides {
  TensorStrides q, k, v, o;
  TensorStrides bias{};
  int64_t biasKey = 0;

  /// The packed layouts of AttentionProblem (BSHD, or THD under varlen).
  static ForwardStrides packed(const KernelSpec &spec,
                               const AttentionProblem &problem);
};

/// KernelArgs for \p problem (validated) with its tensors at \p strides.
KernelArgs makeKernelArgs(const KernelSpec &spec,
                          const AttentionProblem &problem,
                          const ForwardBuffers &buffers,
                          const ForwardStrides &strides);

/// KernelArgs for \p problem (validated) in the packed layouts of
/// AttentionProblem (BSHD, or THD under varlen).
KernelArgs makeKernelArgs(const KernelSpec &spec,
                          const AttentionProblem &problem,
                          const ForwardBuffers &buffers);

/// Work items of a call of \p spec's kernel, any family: batch * heads *
/// query tiles (heads: itemHeads, ir/KernelAbi.h), times max(numSplits, 1)
/// for the families that cut key ranges (hasSplitWorkItems); under a split
/// schedule heads * query tiles * numSplits (every sequence's parts).
int64_t workItems(const KernelSpec &spec, const KernelArgs &params);

class HostKernel {
public:
  /// Compiles (through \p cache) and links the kernel of a resolved host
  /// spec; refuses targets this CPU cannot run.
  static llvm::Expected<HostKernel> load(const KernelSpec &spec,
                                         KernelCache &cache);

  const KernelSpec &spec() const { return kernelSpec; }
  /// Where the artifact came from on this load (memory, disk, compiled).
  ArtifactOrigin origin() const { return artifactOrigin; }
  HostKernelFn entry() const { return fn; }

  void run(const KernelArgs &params, HostExecutor &executor) const;

private:
  HostKernel(KernelSpec spec, HostKernelFn fn, ArtifactOrigin origin)
      : kernelSpec(std::move(spec)), fn(fn), artifactOrigin(origin) {}

  KernelSpec kernelSpec;
  HostKernelFn fn;
  ArtifactOrigin artifactOrigin;
};

} // namespace fmhajit
