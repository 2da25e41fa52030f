//===- DeviceForwardData.h - Device copies of a forward call's buffers ----===//
//
// The host makes the inputs (seeded HostTensors, cu_seqlens, ALiBi slopes);
// DeviceForwardData allocates their device twins from the problem's packed
// shapes (ForwardSizes), uploads the inputs, poisons the outputs with NaN
// on the device and copies O and LSE back. Sizes come from (spec, problem),
// so host and device agree by construction. It is written once over a
// runtime and its buffer type: Buffer::create(runtime, bytes, what),
// Buffer::upload(runtime, data, bytes, what), pointer(), size(),
// poison(DType), copyTo(data, bytes): CUDA's DeviceBuffer
// (CudaForwardData.h) and HIP's HipBuffer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/AttentionProblem.h"
#include "runtime/HostKernel.h"
#include "specs/Errors.h"
#include "llvm/Support/Error.h"
#include <tuple>

namespace fmhajit {

/// Bytes of each buffer of a forward call of \p spec on \p problem (zero for
/// those the spec does not use).
struct ForwardSizes {
  size_t q = 0, k = 0, v = 0, o = 0, lse = 0;
  size_t cuSeqlensQ = 0, cuSeqlensK = 0, alibiSlopes = 0;

  static ForwardSizes of(const KernelSpec &spec, const AttentionProblem &problem);
  size_t total() const;
};

/// An error when the tensors of (\p spec, \p problem) exceed \p deviceBytes
/// of \p deviceName's memory. Callers check before making the host copies:
/// a problem too large for the GPU would first exhaust host memory.
llvm::Error checkForwardFits(const KernelSpec &spec, const AttentionProblem &problem,
                             size_t deviceBytes, const std::string &deviceName);

template <typename Runtime, typename Buffer> class DeviceForwardData {
public:
  /// Allocates device buffers for (\p spec, \p problem), uploads the inputs
  /// of \p host (host pointers, as makeKernelArgs takes them) and poisons
  /// the outputs.
  static llvm::Expected<DeviceForwardData> upload(Runtime &runtime, const KernelSpec &spec,
                                                  const AttentionProblem &problem,
                                                  const ForwardBuffers &host) {
    ForwardSizes sizes = ForwardSizes::of(spec, problem);
    DeviceForwardData data;
    data.outType = spec.outType();
    struct Input { Buffer *buffer; const void *data; size_t bytes; const char *what; };
    const Input inputs[] = {{&data.q, host.q, sizes.q, "q"},
                            {&data.k, host.k, sizes.k, "k"},
                            {&data.v, host.v, sizes.v, "v"},
                            {&data.cuSeqlensQ, host.cuSeqlensQ, sizes.cuSeqlensQ, "cu_seqlens_q"},
                            {&data.cuSeqlensK, host.cuSeqlensK, sizes.cuSeqlensK, "cu_seqlens_k"},
                            {&data.alibiSlopes, host.alibiSlopes, sizes.alibiSlopes,
                             "alibi slopes"}};
    for (const Input &in : inputs) {
      auto buffer = Buffer::upload(runtime, in.data, in.bytes, in.what);
      if (!buffer)
        return buffer.takeError(); // buffers made so far are freed with data
      *in.buffer = std::move(*buffer);
    }
    for (auto [buffer, bytes, what] :
         {std::tuple{&data.o, sizes.o, "o"}, std::tuple{&data.lse, sizes.lse, "lse"}}) {
      auto made = Buffer::create(runtime, bytes, what);
      if (!made)
        return made.takeError();
      *buffer = std::move(*made);
    }
    if (llvm::Error err = data.poisonOutputs())
      return std::move(err);
    return std::move(data);
  }

  /// The device pointers, for makeKernelArgs.
  ForwardBuffers buffers() const {
    ForwardBuffers b{q.pointer(), k.pointer(), v.pointer(), o.pointer()};
    b.lse = static_cast<float *>(lse.pointer());
    b.cuSeqlensQ = static_cast<const int32_t *>(cuSeqlensQ.pointer());
    b.cuSeqlensK = static_cast<const int32_t *>(cuSeqlensK.pointer());
    b.alibiSlopes = static_cast<const float *>(alibiSlopes.pointer());
    return b;
  }

  /// Fills O and LSE with NaN on the device.
  llvm::Error poisonOutputs() {
    if (llvm::Error err = o.poison(outType))
      return err;
    return lse.poison(DType::F32);
  }

  /// Copies O and LSE (when the spec has it) into \p host's o and lse.
  llvm::Error download(const ForwardBuffers &host) const {
    if (llvm::Error err = o.copyTo(host.o, o.size()))
      return err;
    if (lse.size() && !host.lse)
      return makeError(ErrorKind::Usage, "the spec has lse=1 but no host lse buffer was given");
    return lse.copyTo(host.lse, lse.size());
  }

private:
  DeviceForwardData() = default;
  DType outType = DType::F32;
  Buffer q, k, v, o, lse, cuSeqlensQ, cuSeqlensK, alibiSlopes;
};

} // namespace fmhajit
