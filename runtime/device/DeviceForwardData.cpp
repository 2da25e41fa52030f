//===- DeviceForwardData.cpp - Sizes of a forward call's device buffers ---===//
#include "runtime/device/DeviceForwardData.h"
#include "runtime/device/TailSplit.h"
#include "specs/Errors.h"
#include "llvm/Support/Format.h"
#include <tuple>

using namespace fmhajit;

ForwardSizes ForwardSizes::of(const KernelSpec &spec,
                              const AttentionProblem &p) {
  auto bytes = [](llvm::ArrayRef<int64_t> shape, DType type) {
    return size_t(numElements(shape)) * dtypeBytes(type);
  };
  ForwardSizes s;
  s.q = bytes(p.qShape(), spec.dtype);
  s.k = bytes(p.kShape(), spec.dtype);
  s.v = bytes(p.vShape(), spec.dtype);
  s.o = bytes(p.oShape(), spec.outType());
  if (spec.lse)
    s.lse = bytes(p.lseShape(), DType::F32);
  if (spec.varlen)
    s.cuSeqlensQ = s.cuSeqlensK = size_t(p.batch + 1) * sizeof(int32_t);
  if (spec.bias == Bias::Alibi)
    s.alibiSlopes = size_t(p.headsQ) * sizeof(float);
  return s;
}

size_t ForwardSizes::total() const {
  return q + k + v + o + lse + cuSeqlensQ + cuSeqlensK + alibiSlopes;
}

static std::string gibibytes(size_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::format("%.2f GiB", double(bytes) / (1ull << 30));
  return text;
}

llvm::Error fmhajit::checkForwardFits(const KernelSpec &spec,
                                      const AttentionProblem &problem,
                                      size_t deviceBytes,
                                      const std::string &deviceName) {
  size_t total = ForwardSizes::of(spec, problem).total();
  if (total <= deviceBytes)
    return llvm::Error::success();
  return makeError(
      ErrorKind::Usage,
      "the problem's tensors need " + gibibytes(total) + " but " + deviceName +
          " has " + gibibytes(deviceBytes) +
          "; use a smaller batch, fewer heads or shorter sequences");
}

llvm::Error fmhajit::checkFitsOnGpu(const GpuDriver &driver,
                                    const KernelSpec &spec,
                                    const AttentionProblem &problem) {
  return checkForwardFits(spec, problem, driver.device().totalMemory,
                          driver.device().name);
}

llvm::Expected<DeviceForwardData>
DeviceForwardData::upload(GpuDriver &driver, const KernelSpec &spec,
                          const AttentionProblem &problem,
                          const ForwardBuffers &host) {
  ForwardSizes sizes = ForwardSizes::of(spec, problem);
  DeviceForwardData data;
  data.outType = spec.outType();
  struct Input {
    GpuBuffer *buffer;
    const void *data;
    size_t bytes;
    const char *what;
  };
  const Input inputs[] = {
      {&data.q, host.q, sizes.q, "q"},
      {&data.k, host.k, sizes.k, "k"},
      {&data.v, host.v, sizes.v, "v"},
      {&data.cuSeqlensQ, host.cuSeqlensQ, sizes.cuSeqlensQ, "cu_seqlens_q"},
      {&data.cuSeqlensK, host.cuSeqlensK, sizes.cuSeqlensK, "cu_seqlens_k"},
      {&data.alibiSlopes, host.alibiSlopes, sizes.alibiSlopes, "alibi slopes"}};
  for (const Input &in : inputs) {
    auto buffer = GpuBuffer::upload(driver, in.data, in.bytes, in.what);
    if (!buffer)
      return buffer.takeError(); // buffers made so far are freed with data
    *in.buffer = std::move(*buffer);
  }
  for (auto [buffer, bytes, what] : {std::tuple{&data.o, sizes.o, "o"},
                                     std::tuple{&data.lse, sizes.lse, "lse"}}) {
    auto made = GpuBuffer::create(driver, bytes, what);
    if (!made)
      return made.takeError();
    *buffer = std::move(*made);
  }
  if (llvm::Error err = data.poisonOutputs())
    return std::move(err);
  return std::move(data);
}

ForwardBuffers DeviceForwardData::buffers() const {
  ForwardBuffers b{q.pointer(), k.pointer(), v.pointer(), o.pointer()};
  b.lse = static_cast<float *>(lse.pointer());
  b.cuSeqlensQ = static_cast<const int32_t *>(cuSeqlensQ.pointer());
  b.cuSeqlensK = static_cast<const int32_t *>(cuSeqlensK.pointer());
  b.alibiSlopes = static_cast<const float *>(alibiSlopes.pointer());
  return b;
}

llvm::Error DeviceForwardData::poisonOutputs() {
  if (llvm::Error err = o.poison(outType))
    return err;
  return lse.poison(DType::F32);
}

llvm::Error DeviceForwardData::download(const ForwardBuffers &host) const {
  if (llvm::Error err = o.copyTo(host.o, o.size()))
    return err;
  if (lse.size() && !host.lse)
    return makeError(ErrorKind::Usage,
                     "the spec has lse=1 but no host lse buffer was given");
  return lse.copyTo(host.lse, lse.size());
}

llvm::Expected<std::optional<GpuBuffer>>
fmhajit::allocatePretransposedValues(GpuDriver &driver, const KernelSpec &spec,
                                     const AttentionProblem &problem) {
  if (!spec.v_pretranspose)
    return std::nullopt;
  auto buffer = GpuBuffer::create(
      driver,
      size_t(pretransposedValuesBytes(spec, problem.batch, problem.headsKv,
                                      problem.maxSeqlenK())),
      "v^T");
  if (!buffer)
    return buffer.takeError();
  return std::optional<GpuBuffer>(std::move(*buffer));
}

llvm::Expected<std::optional<GpuBuffer>>
fmhajit::allocateTailSplit(GpuDriver &driver, const KernelSpec &spec,
                           KernelArgs &params) {
  KernelArgs whole = params;
  whole.tailParts = 0;
  TailSplit split =
      chooseTailSplit(spec, workItems(spec, whole), params.seqlenK,
                      driver.device().computeUnits);
  setTailSplit(params, spec, split, nullptr);
  if (!split.splits())
    return std::nullopt;
  auto buffer = GpuBuffer::create(
      driver, size_t(tailWorkspaceBytes(spec, split)), "tail partials");
  if (!buffer)
    return buffer.takeError();
  setTailSplit(params, spec, split, buffer->pointer());
  return std::optional<GpuBuffer>(std::move(*buffer));
}
