//===- TensorMapBoxes.cpp - What a TMA kernel's tensor maps describe ------===//
#include "runtime/device/TensorMapBoxes.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;

namespace {
struct TensorView {
  const char *name;
  const void *base;
  const TensorStrides &strides;
  int64_t width, rows, heads;
  unsigned boxRows;
};
} // namespace

llvm::Error fmhajit::checkTensorMapBase(const char *tensor, const void *base) {
  if (reinterpret_cast<uintptr_t>(base) % 16)
    return makeError(ErrorKind::Usage,
                     llvm::Twine(tensor) +
                         " must start on a 16-byte boundary for TMA "
                         "(pipeline=wgmma, stages>=2); use stages=1");
  return llvm::Error::success();
}

static llvm::Expected<TensorMapRequest> requestFor(const TensorView &t,
                                                   const KernelSpec &spec,
                                                   const WgmmaLayout &layout,
                                                   int64_t batch) {
  unsigned elementBytes = dtypeBytes(spec.dtype);
  TensorMapRequest r;
  r.tensor = t.name;
  r.base = t.base;
  r.dtype = spec.dtype;
  r.swizzleBytes = layout.slabBytes(unsigned(t.width));
  uint64_t dims[4] = {uint64_t(t.width), uint64_t(t.rows), uint64_t(t.heads),
                      uint64_t(batch)};
  int64_t strides[3] = {t.strides.row, t.strides.head, t.strides.batch};
  std::copy(std::begin(dims), std::end(dims), r.dims);
  uint32_t box[4] = {r.swizzleBytes / elementBytes, t.boxRows, 1, 1};
  std::copy(std::begin(box), std::end(box), r.box);
  if (llvm::Error err = checkTensorMapBase(t.name, t.base))
    return std::move(err);
  static const char *const kStrideNames[] = {"row", "head", "batch"};
  for (unsigned i = 0; i < 3; ++i) {
    int64_t bytes = strides[i] * int64_t(elementBytes);
    if (dims[i + 1] == 1 && (bytes <= 0 || bytes % 16))
      bytes = 16; // never stepped over: any stride TMA accepts
    if (bytes <= 0 || bytes % 16)
      return makeError(ErrorKind::Usage,
                       llvm::Twine(t.name) + "'s " + kStrideNames[i] +
                           " stride is " + llvm::Twine(bytes) +
                           " bytes; TMA (pipeline=wgmma, stages>=2) needs a "
                           "positive multiple of 16: use stages=1");
    r.strideBytes[i] = uint64_t(bytes);
  }
  return r;
}

llvm::Expected<std::array<TensorMapRequest, kNumTensorMaps>>
fmhajit::tensorMapRequests(const KernelSpec &spec, const KernelArgs &args) {
  WgmmaLayout layout(spec, *findArch(spec.target));
  TensorView views[kNumTensorMaps] = {
      {"q", args.q, args.qStrides, spec.d, args.seqlenQ, args.headsQ, spec.bm},
      {"k", args.k, args.kStrides, spec.d, args.seqlenK, args.headsKv, spec.bn},
      {"v", args.v, args.vStrides, spec.headDimV(), args.seqlenK, args.headsKv,
       spec.bn}};
  std::array<TensorMapRequest, kNumTensorMaps> out;
  for (unsigned i = 0; i < kNumTensorMaps; ++i) {
    auto request = requestFor(views[i], spec, layout, args.batch);
    if (!request)
      return request.takeError();
    out[i] = *request;
  }
  return out;
}
