//===- TensorMapBoxes.cpp - What a TMA kernel's tensor maps describe ------===//
#include "runtime/device/TensorMapBoxes.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;

namespace {
struct TensorView {
  const char *name;
  const void *base;
  const TensorStrides &strides;
  int64_t width, rows, heads, batch;
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
                                                   const WgmmaLayout &layout) {
  unsigned elementBytes = dtypeBytes(spec.dtype);
  TensorMapRequest r;
  r.tensor = t.name;
  r.base = t.base;
  r.dtype = spec.dtype;
  r.swizzleBytes = layout.slabBytes(unsigned(t.width));
  uint64_t dims[4] = {uint64_t(t.width), uint64_t(t.rows), uint64_t(t.heads),
                      uint64_t(t.batch)};
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

// v_pretranspose: V^T as the pass writes it, [batch][headsKv][dv][keys]
// with the keys innermost, read in boxes of one slab of keys by dv rows.
static TensorMapRequest pretransposedValues(const KernelSpec &spec,
                                            const WgmmaLayout &layout,
                                            const KernelArgs &args) {
  uint64_t keys = uint64_t(pretransposedKeys(args.seqlenK)),
           dv = spec.headDimV(), heads = uint64_t(args.headsKv);
  TensorMapRequest r;
  r.tensor = valuesMapBase(spec, args).tensor;
  r.base = args.valuesT;
  r.dtype = spec.dtype;
  r.swizzleBytes = layout.slabBytes(spec.bn);
  uint64_t dims[4] = {keys, dv, heads, uint64_t(args.batch)};
  uint64_t strides[3] = {keys, dv * keys, heads * dv * keys}; // fp8: bytes
  uint32_t box[4] = {r.swizzleBytes, uint32_t(dv), 1, 1};
  std::copy(std::begin(dims), std::end(dims), r.dims);
  std::copy(std::begin(strides), std::end(strides), r.strideBytes);
  std::copy(std::begin(box), std::end(box), r.box);
  return r;
}

ValuesMapBase fmhajit::valuesMapBase(const KernelSpec &spec,
                                     const KernelArgs &args) {
  if (spec.v_pretranspose)
    return {"v^T (the workspace)", args.valuesT};
  return {"v", args.v};
}

// fwd_paged on the ring: K and V view each pool, [numPages, pageSize,
// headsKv, d] at kStrides/vStrides (batch: between pages), as pages of rows.
static llvm::Error checkPagedView(const KernelSpec &spec,
                                  const KernelArgs &args) {
  std::string kernel =
      "kernel " + encodeName(spec) + " (fwd_paged on the TMA ring)";
  if (args.numPages < 1)
    return makeError(ErrorKind::Usage,
                     kernel +
                         " needs KernelArgs::numPages, the pages in each "
                         "pool: got " +
                         llvm::Twine(args.numPages));
  if (!readsPagesOf(spec, args.log2PageSize))
    return makeError(ErrorKind::Usage,
                     kernel + " " + pagesTooSmall(spec, args.log2PageSize));
  return llvm::Error::success();
}

llvm::Expected<std::array<TensorMapRequest, kNumTensorMaps>>
fmhajit::tensorMapRequests(const KernelSpec &spec, const KernelArgs &args) {
  WgmmaLayout layout(spec, *findArch(spec.target));
  // Under varlen each map views the packed rows as one sequence; the
  // kernel's boxes start at a sequence's first packed row.
  int64_t rowsQ = spec.varlen ? args.totalQ : args.seqlenQ;
  int64_t rowsK = spec.varlen ? args.totalK : args.seqlenK;
  int64_t batchQ = spec.varlen ? 1 : args.batch, batchK = batchQ;
  unsigned boxRowsK = spec.bn;
  if (spec.varlen && (rowsQ < 1 || rowsK < 1))
    return makeError(ErrorKind::Usage,
                     "kernel " + encodeName(spec) +
                         " (varlen on the TMA ring) needs KernelArgs::totalQ "
                         "and totalK, the packed rows of q and k: got " +
                         llvm::Twine(rowsQ) + " and " + llvm::Twine(rowsK));
  if (loadsPagedBoxes(spec)) {
    if (llvm::Error err = checkPagedView(spec, args))
      return std::move(err);
    rowsK = int64_t(1) << args.log2PageSize;
    batchK = args.numPages;
    boxRowsK = pagedBoxRows(unsigned(args.log2PageSize), spec.bn);
  }
  TensorView views[kNumTensorMaps] = {
      {"q", args.q, args.qStrides, spec.d, rowsQ, args.headsQ, batchQ, spec.bm},
      {"k", args.k, args.kStrides, spec.d, rowsK, args.headsKv, batchK,
       boxRowsK},
      {"v", args.v, args.vStrides, spec.headDimV(), rowsK, args.headsKv, batchK,
       boxRowsK}};
  std::array<TensorMapRequest, kNumTensorMaps> out;
  for (unsigned i = 0; i < kNumTensorMaps; ++i) {
    auto request = requestFor(views[i], spec, layout);
    if (!request)
      return request.takeError();
    out[i] = *request;
  }
  // V's own map was checked above: the pass reads V with the same
  // alignment.
  if (spec.v_pretranspose) {
    ValuesMapBase values = valuesMapBase(spec, args);
    if (llvm::Error err = checkTensorMapBase(values.tensor, values.base))
      return std::move(err);
    out[kVMap] = pretransposedValues(spec, layout, args);
  }
  return out;
}
