//===- CallArgs.cpp - Arrays and keywords -> Problem and Tensors
//-----------===//
#include "python/src/CallArgs.h"
#include <algorithm>
#include <array>
#include <vector>

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

static std::string shapeText(const ArrayView &a) {
  std::string text = "(";
  for (int d = 0; d < a.ndim; ++d)
    text += (d ? ", " : "") + std::to_string(a.shape[d]);
  return text + (a.ndim == 1 ? ",)" : ")");
}

[[noreturn]] static void fail(const std::string &message) {
  throw py::value_error(message);
}

static void checkRank(const ArrayView &a, int ndim, const char *dims) {
  if (a.ndim != ndim)
    fail(a.what + ": expected " + dims + "; got shape " + shapeText(a));
}

// q, k, v and out: a floating dtype, the last dim contiguous (every
// fmhajit kernel reads rows), no negative strides.
static void checkOperand(const ArrayView &a) {
  if (a.type != ElementType::F32 && a.type != ElementType::F16 &&
      a.type != ElementType::BF16)
    throw py::type_error(a.what + ": dtype " + a.typeName() +
                         " is not supported; use float32, float16 or "
                         "bfloat16 (from NumPy: bfloat16 bits as uint16)");
  // An empty array's strides mean nothing (NumPy 2 gives 0):
  // checkNotEmpty refuses it with the message that says why.
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] < 1)
      return;
  for (int d = 0; d < a.ndim; ++d)
    if (a.strides[d] < 0)
      fail(a.what + ": negative strides are not supported; pass a copy");
  // A 0-dim array has no head_dim: checkShapes says what it should be.
  if (a.ndim > 0 && a.shape[a.ndim - 1] > 1 && a.strides[a.ndim - 1] != 1)
    fail(a.what +
         ": the last dim (head_dim) must be contiguous, stride 1; "
         "got stride " +
         std::to_string(a.strides[a.ndim - 1]) + ": pass a contiguous copy");
}

static void checkSameDevice(const ArrayView &a, const ArrayView &q) {
  if (a.onCuda != q.onCuda || a.deviceId != q.deviceId)
    fail(a.what + " is on " + a.deviceText() + " but q is on " +
         q.deviceText() + ": put every array on one device");
}

static void checkDim(const ArrayView &a, int dim, int64_t expected,
                     const char *name, const ArrayView &from) {
  if (a.shape[dim] != expected)
    fail(a.what + " has " + name + " " + std::to_string(a.shape[dim]) +
         " but " + from.what + " has " + std::to_string(expected) +
         " (shapes " + shapeText(a) + " and " + shapeText(from) + ")");
}

// A zero-size dim: the Problem reads 0 as "the default" for seqlenK,
// headsKv and headDimV, so it must not get that far.
static void checkNotEmpty(const ArrayView &a) {
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] < 1)
      fail(a.what + ": every dim must be >= 1; got shape " + shapeText(a));
}

// Q, K, V and O's shapes agree; the leading dims are [batch, seq] or, under
// varlen, [total].
static void checkShapes(const CallArrays &a, bool varlen) {
  const char *dims = varlen ? "[total_tokens, heads, head_dim] (varlen)"
                            : "[batch, seqlen, heads, head_dim]";
  int rank = varlen ? 3 : 4;
  for (const ArrayView *x : {&a.q, &a.k, &a.v}) {
    checkRank(*x, rank, dims);
    checkNotEmpty(*x);
  }
  for (int d = 0; d < rank - 1; ++d)
    checkDim(a.v, d, a.k.shape[d], d == rank - 2 ? "heads" : "a leading dim",
             a.k);
  if (!varlen)
    checkDim(a.k, 0, a.q.shape[0], "batch", a.q);
  checkDim(a.k, rank - 1, a.q.shape[rank - 1], "head_dim", a.q);
  if (!a.out)
    return;
  checkRank(*a.out, rank, dims);
  for (int d = 0; d < rank - 1; ++d)
    checkDim(*a.out, d, a.q.shape[d], "a leading dim", a.q);
  checkDim(*a.out, rank - 1, a.v.shape[rank - 1], "head_dim", a.v);
}

static int64_t elementCount(const ArrayView &a) {
  int64_t count = 1;
  for (int d = 0; d < a.ndim; ++d)
    count *= a.shape[d];
  return count;
}

static int64_t elementBytes(ElementType type) {
  return type == ElementType::F16 || type == ElementType::BF16 ? 2 : 4;
}

// Whether the bytes \p a and \p b can touch intersect (strides >= 0).
static bool overlap(const ArrayView &a, const ArrayView &b) {
  auto range = [](const ArrayView &x) {
    int64_t last = 0;
    for (int d = 0; d < x.ndim; ++d)
      last += (x.shape[d] - 1) * x.strides[d];
    auto begin = reinterpret_cast<uintptr_t>(x.data);
    return std::pair(begin, begin + (last + 1) * elementBytes(x.type));
  };
  auto [aBegin, aEnd] = range(a);
  auto [bBegin, bEnd] = range(b);
  return a.onCuda == b.onCuda && aBegin < bEnd && bBegin < aEnd;
}

static void checkApart(const ArrayView &output, const ArrayView &input) {
  if (overlap(output, input))
    fail(output.what + " overlaps " + input.what +
         " in memory: give it memory of its own");
}

// The kernels read Q, K and V (and the sinks, the bias, a variant's
// tensors) while they write O and the LSE: outputs in the inputs' memory
// would read back what they wrote.
static void checkOutputsApart(const CallArrays &a) {
  for (const std::optional<ArrayView> *output : {&a.out, &a.lse}) {
    if (!*output)
      continue;
    for (const ArrayView *input : {&a.q, &a.k, &a.v})
      checkApart(**output, *input);
    for (const std::optional<ArrayView> *extra : {&a.sinks, &a.bias})
      if (*extra)
        checkApart(**output, **extra);
    for (const ArrayView &tensor : a.variantTensors)
      checkApart(**output, tensor);
  }
  if (a.out && a.lse)
    checkApart(*a.lse, *a.out);
}

static void checkOperands(const CallArrays &a) {
  for (const ArrayView *x : {&a.q, &a.k, &a.v}) {
    checkOperand(*x);
    checkSameDevice(*x, a.q);
    if (x->type != a.q.type)
      throw py::type_error(x->what + ": dtype " + x->typeName() +
                           " differs from q's " + a.q.typeName());
  }
  if (!a.out)
    return;
  checkOperand(*a.out);
  checkSameDevice(*a.out, a.q);
  if (a.out->type != a.q.type && a.out->type != ElementType::F32)
    throw py::type_error("out: dtype " + a.out->typeName() +
                         " is neither q's " + a.q.typeName() + " nor float32");
}

// A 1-D packed host array of \p type and \p length elements (0: any).
static void checkVector(const ArrayView &a, ElementType type,
                        const char *typeName, int64_t length) {
  if (a.type != type || a.ndim != 1)
    throw py::type_error(a.what + ": expected a 1-D " + typeName +
                         " array; got " + a.typeName() + " of shape " +
                         shapeText(a));
  if (!a.packed())
    fail(a.what + ": must be contiguous");
  if (length && a.shape[0] != length)
    fail(a.what + ": expected " + std::to_string(length) +
         " values (one per query head); got " + std::to_string(a.shape[0]));
}

// The plan reads cu_seqlens and the slopes on the host.
static void checkHost(const ArrayView &a) {
  if (a.onCuda)
    fail(a.what + ": the plan needs a host copy; got an array on " +
         a.deviceText());
}

static std::vector<int32_t> cuSeqlensOf(const ArrayView &cu,
                                        const ArrayView &rows) {
  checkHost(cu);
  checkVector(cu, ElementType::Int32, "int32", 0);
  const auto *values = static_cast<const int32_t *>(cu.data);
  std::vector<int32_t> out(values, values + cu.shape[0]);
  // A varlen tensor must hold every row the lengths reach; the API checks
  // the rest (from 0, never decreasing, batch + 1 values).
  if (!out.empty() && *std::max_element(out.begin(), out.end()) > rows.shape[0])
    fail(cu.what + " reaches row " +
         std::to_string(*std::max_element(out.begin(), out.end())) + " but " +
         rows.what + " has " + std::to_string(rows.shape[0]) + " rows");
  return out;
}

static void checkLse(const ArrayView &lse, const ArrayView &q, bool varlen) {
  if (lse.type != ElementType::F32)
    throw py::type_error("lse: dtype " + lse.typeName() +
                         " is not supported; use float32");
  checkSameDevice(lse, q);
  bool fits = varlen ? lse.ndim == 2 && lse.shape[0] == q.shape[1] &&
                           lse.shape[1] == q.shape[0]
                     : lse.ndim == 3 && lse.shape[0] == q.shape[0] &&
                           lse.shape[1] == q.shape[2] &&
                           lse.shape[2] == q.shape[1];
  if (!fits)
    fail(std::string("lse: expected ") +
         (varlen ? "[heads_q, total_q]" : "[batch, heads_q, seqlen_q]") +
         " for q of shape " + shapeText(q) + "; got " + shapeText(lse));
  if (!lse.packed())
    fail("lse: must be contiguous");
}

// Packed arrays say BSHD, so that plans describe them as the CLI does.
static api::TensorLayout layoutOf(const ArrayView &a, bool varlen) {
  if (a.packed())
    return api::TensorLayout::bshd();
  if (varlen)
    return api::TensorLayout::strided(0, a.strides[0], a.strides[1]);
  return api::TensorLayout::strided(a.strides[0], a.strides[1], a.strides[2]);
}

// batch, lengths and heads from the shapes (varlen: from cu_seqlens).
static void setShapes(api::Problem &p, const CallArrays &a, bool varlen) {
  int headDim = varlen ? 1 : 2;
  p.headsQ = a.q.shape[headDim];
  p.headsKv = a.k.shape[headDim];
  p.headDim = a.q.shape[headDim + 1];
  p.headDimV = a.v.shape[headDim + 1];
  if (varlen) {
    p.cuSeqlensQ = cuSeqlensOf(*a.cuSeqlensQ, a.q);
    p.cuSeqlensK = cuSeqlensOf(*a.cuSeqlensK, a.k);
    p.batch = int64_t(p.cuSeqlensQ.size()) - 1;
  } else {
    p.batch = a.q.shape[0];
    p.seqlenQ = a.q.shape[1];
    p.seqlenK = a.k.shape[1];
  }
  p.q = layoutOf(a.q, varlen);
  p.k = layoutOf(a.k, varlen);
  p.v = layoutOf(a.v, varlen);
  if (a.out)
    p.o = layoutOf(*a.out, varlen);
}

// attn_bias: fp32 on q's device, broadcast to [batch, heads_q, seqlen_q,
// seqlen_k] as NumPy broadcasts (dims aligned on the right, a dim of 1
// repeats): each dim of 1, or missing, gets stride 0 (BiasStrides).
static api::BiasStrides biasStridesOf(const ArrayView &b,
                                      const api::Problem &p) {
  if (b.type != ElementType::F32)
    throw py::type_error(b.what + ": dtype " + b.typeName() +
                         " is not supported; the bias is float32 whatever "
                         "q's dtype (torch: bias.float())");
  std::array<int64_t, 4> full{p.batch, p.headsQ, p.seqlenQ, p.seqlenK};
  std::array<int64_t, 4> strides{};
  int lead = 4 - b.ndim;
  for (int d = 0; d < b.ndim; ++d) {
    if (b.shape[d] == 1)
      continue; // broadcast: stride 0
    if (b.shape[d] != full[lead + d])
      fail(b.what + ": shape " + shapeText(b) +
           " does not broadcast to [batch, heads_q, seqlen_q, seqlen_k] = (" +
           std::to_string(full[0]) + ", " + std::to_string(full[1]) + ", " +
           std::to_string(full[2]) + ", " + std::to_string(full[3]) +
           "): each dim must be that size or 1");
    if (b.strides[d] < 0)
      fail(b.what + ": negative strides are not supported; pass a copy");
    strides[lead + d] = b.strides[d];
  }
  return {strides[0], strides[1], strides[2], strides[3]};
}

// Sinks and the bias, read by the kernels at run time: the plan depends
// on their presence (and the bias's strides), not on their values. Under
// varlen the bias has no shape to broadcast to; the API refuses it.
static void setSinksAndBias(api::Problem &p, const CallArrays &a, bool varlen) {
  if (a.sinks) {
    checkVector(*a.sinks, ElementType::F32, "float32", p.headsQ);
    checkSameDevice(*a.sinks, a.q);
    p.sink = true;
  }
  if (a.bias) {
    checkSameDevice(*a.bias, a.q);
    p.bias = true;
    if (!varlen)
      p.biasStrides = biasStridesOf(*a.bias, p);
  }
}

// A variant's tensor: fp32 on q's device, packed, since fmhajit_tensor
// reads it flat in C order. run() checks that the count is the plan's
// (Plan::variantTensorCount()) and that none is empty.
static void checkVariantTensor(const ArrayView &t, const ArrayView &q) {
  if (t.type != ElementType::F32)
    throw py::type_error(t.what + ": dtype " + t.typeName() +
                         " is not supported; fmhajit_tensor reads float32");
  if (!t.packed())
    fail(t.what + ": must be contiguous (fmhajit_tensor reads it flat, in C "
                  "order); pass a contiguous copy");
  checkSameDevice(t, q);
}

static void setVariant(api::Problem &p, const CallArrays &a,
                       const CallKeywords &kw) {
  if (kw.variant.empty()) {
    if (!a.variantTensors.empty())
      fail("variant_tensors: given without a variant; they are what a "
           "variant's fmhajit_tensor reads: pass variant= too");
    return;
  }
  for (const ArrayView &tensor : a.variantTensors)
    checkVariantTensor(tensor, a.q);
  p.variant = kw.variant;
  p.variantName = kw.variantName;
}

static void setScores(api::Problem &p, const CallArrays &a,
                      const CallKeywords &kw) {
  p.mask = kw.mask;
  p.windowLeft = kw.windowLeft;
  p.windowRight = kw.windowRight;
  p.softcap = kw.softcap;
  p.scale = kw.scale;
  p.alibi = kw.alibi;
  p.dropout = kw.dropout.has_value();
  if (a.alibiSlopes) {
    checkHost(*a.alibiSlopes);
    checkVector(*a.alibiSlopes, ElementType::F32, "float32", p.headsQ);
    const auto *s = static_cast<const float *>(a.alibiSlopes->data);
    p.alibiSlopes.assign(s, s + p.headsQ);
  }
}

// On CUDA the kernels read device copies of cu_seqlens and the slopes.
static void checkDeviceCopies(const CallArrays &a) {
  auto check = [&](const std::optional<ArrayView> &copy,
                   const std::optional<ArrayView> &host, ElementType type,
                   const char *typeName) {
    if (!host)
      return;
    if (!copy)
      fail(host->what + ": a CUDA call needs a device copy as well");
    checkVector(*copy, type, typeName, host->shape[0]);
    checkSameDevice(*copy, a.q);
  };
  check(a.cuSeqlensQDevice, a.cuSeqlensQ, ElementType::Int32, "int32");
  check(a.cuSeqlensKDevice, a.cuSeqlensK, ElementType::Int32, "int32");
  check(a.alibiSlopesDevice, a.alibiSlopes, ElementType::F32, "float32");
}

api::Problem python::problemFor(const CallArrays &a, const CallKeywords &kw) {
  bool varlen = a.cuSeqlensQ || a.cuSeqlensK;
  if (varlen && !(a.cuSeqlensQ && a.cuSeqlensK))
    fail("varlen needs both cu_seqlens_q and cu_seqlens_k");
  checkOperands(a);
  checkShapes(a, varlen);
  api::Problem p;
  setShapes(p, a, varlen);
  p.dtype = a.q.dtype();
  if (a.out && a.out->type != a.q.type)
    p.outDtype = api::DType::F32;
  if (a.lse)
    checkLse(*a.lse, a.q, varlen);
  setVariant(p, a, kw);
  checkOutputsApart(a);
  p.wantLse = a.lse.has_value();
  setScores(p, a, kw);
  setSinksAndBias(p, a, varlen);
  p.device = a.q.onCuda ? api::Device::Cuda : api::Device::Host;
  if (kw.device)
    p.device = *kw.device;
  if (a.q.onCuda)
    checkDeviceCopies(a);
  if (a.q.onCuda && a.q.deviceId != 0)
    fail("q is on " + a.q.deviceText() +
         ": fmhajit runs on CUDA device 0 (the first that "
         "CUDA_VISIBLE_DEVICES shows)");
  return p;
}

static const void *dataOr(const std::optional<ArrayView> &a) {
  return a ? a->data : nullptr;
}

// What a forward's and a backward's tensors share: the device copies of
// cu_seqlens and the slopes, dropout's arguments and the stream.
template <typename T>
static void setShared(T &t, const CallArrays &a, const CallKeywords &kw) {
  t.cuSeqlensQ = static_cast<const int32_t *>(dataOr(a.cuSeqlensQDevice));
  t.cuSeqlensK = static_cast<const int32_t *>(dataOr(a.cuSeqlensKDevice));
  t.alibiSlopes = static_cast<const float *>(dataOr(a.alibiSlopesDevice));
  if (kw.dropout)
    t.dropout = *kw.dropout;
  if (kw.stream)
    t.stream = reinterpret_cast<void *>(*kw.stream);
}

api::Tensors python::tensorsFor(const CallArrays &a, const CallKeywords &kw) {
  api::Tensors t{a.q.data, a.k.data, a.v.data, a.out->data};
  t.lse = a.lse ? static_cast<float *>(a.lse->data) : nullptr;
  t.sinks = static_cast<const float *>(dataOr(a.sinks));
  t.bias = static_cast<const float *>(dataOr(a.bias));
  for (const ArrayView &tensor : a.variantTensors)
    t.variantTensors.push_back(
        {static_cast<const float *>(tensor.data), elementCount(tensor)});
  setShared(t, a, kw);
  return t;
}

// The API lays each gradient out like its partner (Backward.h).
static void checkGradient(const ArrayView &grad, const ArrayView &like,
                          const ArrayView &out) {
  checkSameDevice(grad, like);
  if (grad.type != out.type)
    throw py::type_error(grad.what + ": dtype " + grad.typeName() +
                         " differs from out's " + out.typeName());
  for (int d = 0; d < like.ndim; ++d)
    if (grad.ndim != like.ndim || grad.shape[d] != like.shape[d] ||
        grad.strides[d] != like.strides[d])
      fail(grad.what + ": expected the shape and strides of " + like.what +
           " " + shapeText(like) + "; got " + shapeText(grad));
}

api::BackwardTensors python::backwardTensorsFor(const CallArrays &a,
                                                const GradArrays &g,
                                                const CallKeywords &kw) {
  checkGradient(g.dO, *a.out, *a.out);
  checkGradient(g.dQ, a.q, *a.out);
  checkGradient(g.dK, a.k, *a.out);
  checkGradient(g.dV, a.v, *a.out);
  api::BackwardTensors t;
  t.q = a.q.data, t.k = a.k.data, t.v = a.v.data, t.o = a.out->data;
  t.lse = static_cast<const float *>(a.lse->data);
  t.dO = g.dO.data, t.dQ = g.dQ.data, t.dK = g.dK.data, t.dV = g.dV.data;
  setShared(t, a, kw);
  return t;
}
