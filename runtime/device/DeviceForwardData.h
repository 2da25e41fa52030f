//===- DeviceForwardData.h - Device copies of a forward call's buffers ----===//
//
// The host makes the inputs (seeded HostTensors, cu_seqlens, ALiBi slopes);
// DeviceForwardData allocates their device twins from the problem's packed
// shapes (ForwardSizes), uploads the inputs, poisons the outputs with NaN
// on the device and copies O and LSE back. Sizes come from (spec, problem),
// so host and device agree by construction. Written once over GpuDriver:
// CUDA and HIP alike.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/GpuResources.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/AttentionProblem.h"
#include "llvm/Support/Error.h"
#include <optional>

namespace fmhajit {

/// Bytes of each buffer of a forward call of \p spec on \p problem (zero for
/// those the spec does not use).
struct ForwardSizes {
  size_t q = 0, k = 0, v = 0, o = 0, lse = 0;
  size_t cuSeqlensQ = 0, cuSeqlensK = 0, alibiSlopes = 0;

  static ForwardSizes of(const KernelSpec &spec,
                         const AttentionProblem &problem);
  size_t total() const;
};

/// An error when the tensors of (\p spec, \p problem) exceed \p deviceBytes
/// of \p deviceName's memory. Callers check before making the host copies:
/// a problem too large for the GPU would first exhaust host memory.
llvm::Error checkForwardFits(const KernelSpec &spec,
                             const AttentionProblem &problem,
                             size_t deviceBytes, const std::string &deviceName);

/// checkForwardFits against \p driver's GPU.
llvm::Error checkFitsOnGpu(const GpuDriver &driver, const KernelSpec &spec,
                           const AttentionProblem &problem);

/// v_pretranspose: a buffer for the V^T the kernel's pass writes
/// (KernelArgs::valuesT), for launches outside a plan, whose workspace
/// holds it otherwise; none for other specs.
llvm::Expected<std::optional<GpuBuffer>>
allocatePretransposedValues(GpuDriver &driver, const KernelSpec &spec,
                            const AttentionProblem &problem);

/// A split tail's counters and partials (TailSplit.h) for a launch outside
/// a plan, with \p params pointed at them; none where the kernel splits no
/// tail or the split would not pay on \p driver's GPU (FMHAJIT_TAIL_PARTS
/// forces one).
llvm::Expected<std::optional<GpuBuffer>>
allocateTailSplit(GpuDriver &driver, const KernelSpec &spec,
                  KernelArgs &params);

class DeviceForwardData {
public:
  /// Allocates device buffers for (\p spec, \p problem), uploads the inputs
  /// of \p host (host pointers, as makeKernelArgs takes them) and poisons
  /// the outputs.
  static llvm::Expected<DeviceForwardData>
  upload(GpuDriver &driver, const KernelSpec &spec,
         const AttentionProblem &problem, const ForwardBuffers &host);

  /// The device pointers, for makeKernelArgs.
  ForwardBuffers buffers() const;
  /// Fills O and LSE with NaN on the device.
  llvm::Error poisonOutputs();
  /// Copies O and LSE (when the spec has it) into \p host's o and lse.
  llvm::Error download(const ForwardBuffers &host) const;

private:
  DeviceForwardData() = default;
  DType outType = DType::F32;
  GpuBuffer q, k, v, o, lse, cuSeqlensQ, cuSeqlensK, alibiSlopes;
};

} // namespace fmhajit
