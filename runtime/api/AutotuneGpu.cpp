//===- AutotuneGpu.cpp - Timing candidates on the GPU ---------------------===//
#include "runtime/api/Autotune.h"
#include "runtime/device/DeviceForwardData.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/device/GpuResources.h"
#include "specs/EncodedName.h"

using namespace fmhajit;

namespace {
/// Device buffers of a problem's sizes and layouts; inputs are whatever the
/// allocator returns (timing does not depend on the values).
struct DeviceScratch {
  GpuBuffer q, k, v, o, lse, cuQ, cuK, slopes, sinks, bias;
  GpuBuffer zero; ///< one 0.0f: every variant tensor

  static llvm::Expected<DeviceScratch> create(GpuDriver &driver,
                                              const LoweredProblem &l);
  ForwardBuffers buffers() const {
    auto ptr = [](const GpuBuffer &b) {
      return b.size() ? b.pointer() : nullptr;
    };
    return {ptr(q),
            ptr(k),
            ptr(v),
            ptr(o),
            static_cast<float *>(ptr(lse)),
            static_cast<const int32_t *>(ptr(cuQ)),
            static_cast<const int32_t *>(ptr(cuK)),
            static_cast<const float *>(ptr(slopes)),
            static_cast<const float *>(ptr(sinks)),
            static_cast<const float *>(ptr(bias)),
            timingVariantTensors(static_cast<const float *>(ptr(zero)))};
  }
};
} // namespace

llvm::Expected<DeviceScratch> DeviceScratch::create(GpuDriver &driver,
                                                    const LoweredProblem &l) {
  const KernelSpec &s = l.features;
  DeviceScratch d;
  auto alloc = [&](GpuBuffer &b, const TensorShape &shape,
                   const TensorStrides &strides, DType t,
                   const char *what) -> llvm::Error {
    auto buffer = GpuBuffer::create(
        driver, size_t(spanElements(shape, strides)) * dtypeBytes(t), what);
    if (!buffer)
      return buffer.takeError();
    b = std::move(*buffer);
    return llvm::Error::success();
  };
  auto upload = [&](GpuBuffer &b, const void *data, size_t bytes,
                    const char *what) -> llvm::Error {
    if (!bytes)
      return llvm::Error::success();
    auto buffer = GpuBuffer::upload(driver, data, bytes, what);
    if (!buffer)
      return buffer.takeError();
    b = std::move(*buffer);
    return llvm::Error::success();
  };
  size_t lseBytes =
      s.lse ? size_t(numElements(l.problem.lseShape())) * sizeof(float) : 0;
  if (llvm::Error err = llvm::joinErrors(
          llvm::joinErrors(alloc(d.q, l.qShape, l.strides.q, s.dtype, "q"),
                           alloc(d.k, l.kShape, l.strides.k, s.dtype, "k")),
          llvm::joinErrors(
              alloc(d.v, l.vShape, l.strides.v, s.dtype, "v"),
              alloc(d.o, l.oShape, l.strides.o, s.outType(), "o"))))
    return std::move(err);
  std::vector<float> zeros(lseBytes / sizeof(float));
  if (llvm::Error err = llvm::joinErrors(
          llvm::joinErrors(upload(d.lse, zeros.data(), lseBytes, "lse"),
                           upload(d.cuQ, l.cuSeqlensQ.data(),
                                  l.cuSeqlensQ.size() * 4, "cu_seqlens_q")),
          llvm::joinErrors(upload(d.cuK, l.cuSeqlensK.data(),
                                  l.cuSeqlensK.size() * 4, "cu_seqlens_k"),
                           upload(d.slopes, l.alibiSlopes.data(),
                                  l.alibiSlopes.size() * 4, "alibi_slopes"))))
    return std::move(err);
  std::vector<float> sinks = sinksForTiming(l);
  std::vector<float> bias(size_t(biasSpanElements(l)));
  const float zero = 0;
  if (llvm::Error err = llvm::joinErrors(
          llvm::joinErrors(
              upload(d.sinks, sinks.data(), sinks.size() * 4, "sinks"),
              upload(d.bias, bias.data(), bias.size() * 4, "bias")),
          upload(d.zero, &zero, sizeof zero, "variant tensors")))
    return std::move(err);
  return std::move(d);
}

static llvm::Expected<double> timeGpuKernel(const GpuKernel &kernel,
                                            const KernelArgs &params,
                                            const GpuStream &stream,
                                            GpuTimer &timer) {
  if (llvm::Error err = kernel.launch(params, stream.get())) // warm-up
    return std::move(err);
  std::vector<double> times;
  double total = 0;
  while (times.size() < TuningPolicy::kMinRuns ||
         (times.size() < TuningPolicy::kMaxRuns &&
          total < TuningPolicy::kBudgetMs)) {
    auto ms = kernel.launchTimed(params, stream.get(), timer);
    if (!ms)
      return ms.takeError();
    times.push_back(*ms);
    total += *ms;
  }
  return medianOf(times);
}

llvm::Expected<std::vector<TunedTiming>>
fmhajit::timeGpuCandidates(const std::vector<KernelSpec> &candidates,
                           const LoweredProblem &l, KernelCache &cache) {
  auto driver = gpuDriverFor(findArch(l.features.target)->backend);
  if (!driver)
    return driver.takeError();
  auto scratch = DeviceScratch::create(*driver, l);
  if (!scratch)
    return scratch.takeError();
  auto stream = GpuStream::create(*driver);
  if (!stream)
    return stream.takeError();
  auto timer = GpuTimer::create(*driver);
  if (!timer)
    return timer.takeError();
  // Compiled side by side, then timed one at a time.
  auto kernels = GpuKernel::loadAll(findArch(l.features.target)->backend,
                                    candidates, cache);
  if (!kernels)
    return kernels.takeError();
  std::vector<TunedTiming> out;
  for (const GpuKernel &kernel : *kernels) {
    const KernelSpec &spec = kernel.spec();
    KernelArgs params =
        makeKernelArgs(spec, l.problem, scratch->buffers(), l.strides);
    auto valuesT = allocatePretransposedValues(*driver, spec, l.problem);
    if (!valuesT)
      return valuesT.takeError();
    if (*valuesT)
      params.valuesT = (*valuesT)->pointer();
    // Timed with the tail split the plan would run it with.
    auto tail = allocateTailSplit(*driver, spec, params);
    if (!tail)
      return tail.takeError();
    auto ms = timeGpuKernel(kernel, params, *stream, *timer);
    if (!ms)
      return ms.takeError();
    out.push_back({encodeName(spec), *ms});
  }
  return out;
}
