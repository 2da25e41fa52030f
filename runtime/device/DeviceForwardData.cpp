//===- DeviceForwardData.cpp - Sizes of a forward call's device buffers ---===//
#include "runtime/device/DeviceForwardData.h"
#include "specs/Errors.h"
#include "llvm/Support/Format.h"

using namespace fmhajit;

ForwardSizes ForwardSizes::of(const KernelSpec &spec, const AttentionProblem &p) {
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
  llvm::raw_string_ostream(text) << llvm::format("%.2f GiB", double(bytes) / (1ull << 30));
  return text;
}

llvm::Error fmhajit::checkForwardFits(const KernelSpec &spec, const AttentionProblem &problem,
                                      size_t deviceBytes, const std::string &deviceName) {
  size_t total = ForwardSizes::of(spec, problem).total();
  if (total <= deviceBytes)
    return llvm::Error::success();
  return makeError(ErrorKind::Usage,
                   "the problem's tensors need " + gibibytes(total) + " but " + deviceName +
                       " has " + gibibytes(deviceBytes) +
                       "; use a smaller batch, fewer heads or shorter sequences");
}
