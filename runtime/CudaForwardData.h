//===- CudaForwardData.h - The device copies of one forward call's buffers ===//
//
// The host makes the inputs (seeded HostTensors, cu_seqlens, ALiBi slopes);
// CudaForwardData allocates their device twins from the problem's packed
// shapes, uploads the inputs, poisons the outputs with NaN on the device
// and copies O and LSE back. Sizes come from (spec, problem), so host and
// device agree by construction.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/AttentionProblem.h"
#include "runtime/CudaResources.h"
#include "runtime/HostKernel.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

/// Bytes of each buffer of a forward call of \p spec on \p problem (zero for
/// those the spec does not use).
struct ForwardSizes {
  size_t q = 0, k = 0, v = 0, o = 0, lse = 0;
  size_t cuSeqlensQ = 0, cuSeqlensK = 0, alibiSlopes = 0;

  static ForwardSizes of(const KernelSpec &spec, const AttentionProblem &problem);
  size_t total() const;
};

class CudaForwardData {
public:
  /// An error when the tensors of (\p spec, \p problem) exceed the GPU's
  /// memory; callers check before making the host copies too.
  static llvm::Error checkFits(const CudaDriver &driver, const KernelSpec &spec,
                               const AttentionProblem &problem);

  /// Allocates device buffers for (\p spec, \p problem) and uploads the
  /// inputs of \p host (host pointers, as makeFwdParams takes them). Fails
  /// with a clear error when the GPU lacks the memory.
  static llvm::Expected<CudaForwardData> upload(CudaDriver &driver, const KernelSpec &spec,
                                                const AttentionProblem &problem,
                                                const ForwardBuffers &host);

  /// The device pointers, for makeFwdParams.
  ForwardBuffers buffers() const;
  /// Fills O and LSE with NaN on the device.
  llvm::Error poisonOutputs();
  /// Copies O and LSE (when the spec has it) into \p host's o and lse.
  llvm::Error download(const ForwardBuffers &host) const;

private:
  CudaForwardData() = default;
  DType outType = DType::F32;
  DeviceBuffer q, k, v, o, lse, cuSeqlensQ, cuSeqlensK, alibiSlopes;
};

} // namespace fmhajit
