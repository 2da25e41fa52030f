//===- ProblemLowering.cpp - A public Problem in the library's terms ------===//
#include "runtime/api/ProblemLowering.h"
#include "compiler/variants/VariantRegistry.h"
#include "runtime/api/PagedLowering.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/Validate.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>

using namespace fmhajit;
using llvm::Twine;

DType fmhajit::toDType(api::DType type) {
  switch (type) {
  case api::DType::F32:
    return DType::F32;
  case api::DType::F16:
    return DType::F16;
  case api::DType::BF16:
    return DType::BF16;
  case api::DType::F8E4M3:
    return DType::F8E4M3;
  case api::DType::F8E5M2:
    return DType::F8E5M2;
  }
  return DType::F32;
}

Mask fmhajit::toMask(api::Mask mask) {
  switch (mask) {
  case api::Mask::None:
    return Mask::None;
  case api::Mask::Causal:
    return Mask::Causal;
  case api::Mask::CausalBottomRight:
    return Mask::CausalBr;
  case api::Mask::Window:
    return Mask::Window;
  }
  return Mask::None;
}

const char *fmhajit::deviceName(api::Device device) {
  switch (device) {
  case api::Device::Host:
    return "host";
  case api::Device::Cuda:
    return "cuda";
  case api::Device::Hip:
    return "hip";
  }
  return "?";
}

static std::string joinDims(const std::vector<unsigned> &dims) {
  std::vector<std::string> parts;
  for (unsigned d : dims)
    parts.push_back(std::to_string(d));
  return llvm::join(parts, ", ");
}

void fmhajit::checkTypesAndDims(int64_t headDim, int64_t headDimV,
                                api::DType dtype, const ArchInfo &arch,
                                ErrorList &errors) {
  auto checkDim = [&](const char *field, int64_t d) {
    if (d < 1 || d > 1024 || !arch.hasHeadDim(unsigned(d)))
      errors.add(ErrorKind::Usage,
                 Twine(field) + " " + Twine(d) + " is not supported on " +
                     arch.name + "; use one of " + joinDims(arch.headDims));
  };
  checkDim("headDim", headDim);
  if (headDimV != 0)
    checkDim("headDimV", headDimV);
  if (!arch.hasDType(toDType(dtype))) {
    std::vector<std::string> names;
    for (DType t : arch.dtypes)
      names.push_back(keyOf(t).str());
    errors.add(ErrorKind::Usage, "dtype " + keyOf(toDType(dtype)) +
                                     " is not supported on " + arch.name +
                                     "; use " + llvm::join(names, ", "));
  }
}

// The varlen fields: both or neither, each [batch + 1] from 0, not falling.
static void checkCuSeqlens(const api::Problem &p, ErrorList &errors) {
  bool hasQ = !p.cuSeqlensQ.empty(), hasK = !p.cuSeqlensK.empty();
  if (hasQ != hasK) {
    errors.add(ErrorKind::Usage,
               "varlen needs both cuSeqlensQ and cuSeqlensK; only " +
                   Twine(hasQ ? "cuSeqlensQ" : "cuSeqlensK") + " is given");
    return;
  }
  for (auto [name, cu] : {std::pair{"cuSeqlensQ", &p.cuSeqlensQ},
                          std::pair{"cuSeqlensK", &p.cuSeqlensK}}) {
    if (!hasQ)
      break;
    bool rising = llvm::is_sorted(*cu);
    if (cu->size() < 2 || cu->front() != 0 || !rising)
      errors.add(ErrorKind::Usage,
                 Twine(name) + " must be cumulative lengths: batch + 1 "
                               "values starting at 0, never decreasing");
    else if (int64_t(cu->size()) - 1 != p.batch)
      errors.add(ErrorKind::Usage,
                 Twine(name) + " holds " + Twine(cu->size() - 1) +
                     " sequences but batch is " + Twine(p.batch) +
                     ": set batch = " + Twine(cu->size() - 1));
  }
}

// The spec's bias key holds one of ALiBi and the elementwise bias, and the
// kernels have no bias layout for packed sequences or paged keys yet.
static void checkBias(const api::Problem &p, ErrorList &errors) {
  if (!p.bias) {
    if (p.biasStrides)
      errors.add(ErrorKind::Usage,
                 "biasStrides are given but bias is false: set bias = true");
    return;
  }
  if (p.alibi)
    errors.add(ErrorKind::Usage,
               "bias and alibi are both set, and a kernel takes one of them: "
               "add ALiBi's -slope * |i + Sk - Sq - j| into the bias instead");
  if (!p.cuSeqlensQ.empty() || !p.cuSeqlensK.empty())
    errors.add(ErrorKind::Unsupported,
               "bias is not implemented with varlen (cuSeqlensQ/K) yet: pad "
               "the sequences to one length and mask the padding in the bias");
  if (p.pagesKv.enabled())
    errors.add(ErrorKind::Unsupported,
               "bias is not implemented with paged K/V (pagesKv) yet");
  const api::BiasStrides &st = p.biasStrides.value_or(api::BiasStrides{});
  if (st.batch < 0 || st.head < 0 || st.query < 0 || st.key < 0)
    errors.add(ErrorKind::Usage,
               "biasStrides must be >= 0 (0 broadcasts a dim)");
}

static void checkScores(const api::Problem &p, ErrorList &errors) {
  if (p.mask != api::Mask::Window &&
      (p.windowLeft != -1 || p.windowRight != -1))
    errors.add(ErrorKind::Usage,
               "windowLeft/windowRight (" + Twine(p.windowLeft) + ", " +
                   Twine(p.windowRight) +
                   ") are set but mask is not Mask::Window: set "
                   "mask = Mask::Window, or leave them at -1");
  if (!(p.softcap >= 0) || !std::isfinite(p.softcap))
    errors.add(ErrorKind::Usage,
               "softcap must be 0 (off) or a finite value > 0");
  if (!p.alibi && !p.alibiSlopes.empty())
    errors.add(ErrorKind::Usage,
               "alibiSlopes are given but alibi is false: set alibi = true");
  if (!p.sink && !p.sinks.empty())
    errors.add(ErrorKind::Usage,
               "sinks are given but sink is false: set sink = true");
  checkBias(p, errors);
  if (p.dropout &&
      (p.dtype == api::DType::F8E4M3 || p.dtype == api::DType::F8E5M2))
    errors.add(ErrorKind::Unsupported,
               "dropout is not implemented with fp8 inputs: dropout is for "
               "training; use fp32, fp16 or bf16");
  if (p.dropout && p.pagesKv.enabled())
    errors.add(ErrorKind::Unsupported,
               "dropout is not implemented with paged K/V (pagesKv): paged "
               "kernels are inference kernels; use dense K and V");
}

static std::vector<int64_t> lengthsOf(const std::vector<int32_t> &cu) {
  std::vector<int64_t> out;
  for (size_t i = 1; i < cu.size(); ++i)
    out.push_back(int64_t(cu[i]) - cu[i - 1]);
  return out;
}

static KernelSpec featuresOf(const api::Problem &p, const std::string &target) {
  KernelSpec s;
  s.family = p.pagesKv.enabled() ? Family::FwdPaged : Family::Fwd;
  s.dtype = toDType(p.dtype);
  if (p.outDtype)
    s.out = toDType(*p.outDtype);
  s.d = unsigned(p.headDim);
  s.dv = p.headDimV ? unsigned(p.headDimV) : 0;
  s.mask = toMask(p.mask);
  s.bias = p.alibi ? Bias::Alibi : p.bias ? Bias::Elementwise : Bias::None;
  s.softcap = p.softcap > 0;
  s.sink = p.sink;
  s.dropout = p.dropout;
  s.lse = p.wantLse;
  s.varlen = !p.cuSeqlensQ.empty();
  s.target = target;
  return s;
}

// The problem's variant, checked (clang's messages on failure) and
// remembered for the compiler (compiler/variants/VariantRegistry.h): its
// hash into \p spec, the tensor slots it reads into \p l.
static llvm::Error lowerVariant(const api::Problem &p, KernelSpec &spec,
                                LoweredProblem &l) {
  if (p.variant.empty())
    return llvm::Error::success();
  llvm::Expected<VariantHash> hash =
      addVariant({p.variant, p.variantName.empty() ? std::string("variant.cpp")
                                                   : p.variantName});
  if (!hash)
    return hash.takeError();
  llvm::Expected<VariantTensorUse> tensors = findVariantTensors(*hash);
  if (!tensors)
    return tensors.takeError();
  spec.variant = *hash;
  l.variantTensors = *tensors;
  return llvm::Error::success();
}

static AttentionProblem attentionProblemOf(const api::Problem &p,
                                           const KernelSpec &s) {
  AttentionProblem a = AttentionProblem::forSpec(s);
  a.batch = p.batch;
  a.headsQ = p.headsQ;
  a.headsKv = p.headsKv ? p.headsKv : p.headsQ;
  a.seqlenQ = p.seqlenQ;
  a.seqlenK = p.pagesKv.enabled() ? longestSeqlenK(p)
              : p.seqlenK         ? p.seqlenK
                                  : p.seqlenQ;
  a.seqlensQ = lengthsOf(p.cuSeqlensQ);
  a.seqlensK = lengthsOf(p.cuSeqlensK);
  a.scale = p.scale;
  a.softcap = p.softcap;
  a.windowLeft = p.windowLeft;
  a.windowRight = p.windowRight;
  a.alibiSlopes = p.alibiSlopes;
  a.sinks = p.sinks;
  a.variantSource = p.variant;
  return a;
}

// Under paged K/V, K and V are the pools: a "batch" of pages of rows.
static void setShapes(LoweredProblem &l) {
  const AttentionProblem &a = l.problem;
  bool varlen = a.isVarlen();
  int64_t batch = varlen ? 1 : a.batch;
  int64_t sq = varlen ? a.totalQ() : a.seqlenQ,
          sk = varlen ? a.totalK() : a.seqlenK;
  int64_t kvBatch = batch;
  if (l.pagedCache) {
    kvBatch = l.pagedCache->numPages;
    sk = l.pagedCache->pageSize;
  }
  l.qShape = {batch, sq, a.headsQ, a.d, varlen};
  l.kShape = {kvBatch, sk, a.headsKv, a.d, varlen};
  l.vShape = {kvBatch, sk, a.headsKv, a.dv, varlen};
  l.oShape = {batch, sq, a.headsQ, a.dv, varlen};
}

static void checkLayouts(const api::Problem &p, const LoweredProblem &l,
                         ErrorList &errors) {
  checkLayout("q", p.q, l.qShape, false, errors);
  checkLayout("k", p.k, l.kShape, false, errors);
  checkLayout("v", p.v, l.vShape, false, errors);
  checkLayout("o", p.o, l.oShape, true, errors);
}

llvm::Expected<LoweredProblem>
fmhajit::lowerProblem(const api::Problem &p, const std::string &target) {
  const ArchInfo *arch = findArch(target);
  assert(arch && "the caller resolves the target");
  ErrorList errors;
  checkTypesAndDims(p.headDim, p.headDimV, p.dtype, *arch, errors);
  checkCuSeqlens(p, errors);
  checkScores(p, errors);
  checkPagedKv(p, errors);
  if (!errors.empty())
    return errors.take();
  LoweredProblem l;
  if (p.pagesKv.enabled()) {
    l.pagedCache = pagedLayoutOf(p);
    l.seqlensK = p.seqlensK;
  }
  KernelSpec wanted = featuresOf(p, target);
  if (llvm::Error err = lowerVariant(p, wanted, l))
    return std::move(err);
  auto features = validateSpec(wanted);
  if (!features)
    return features.takeError();
  l.features = wanted;
  l.features.out = features->outType();
  l.features.dv = features->headDimV();
  l.problem = attentionProblemOf(p, l.features);
  if (llvm::Error err = l.problem.validate(l.features))
    return std::move(err);
  setShapes(l);
  checkLayouts(p, l, errors);
  if (!errors.empty())
    return errors.take();
  l.qLayout = p.q, l.kLayout = p.k, l.vLayout = p.v, l.oLayout = p.o;
  l.strides = {resolveStrides(p.q, l.qShape), resolveStrides(p.k, l.kShape),
               resolveStrides(p.v, l.vShape), resolveStrides(p.o, l.oShape)};
  if (p.bias) {
    api::BiasStrides bias = p.biasStrides.value_or(api::BiasStrides::packed(
        l.problem.headsQ, l.problem.seqlenQ, l.problem.seqlenK));
    l.strides.bias = {bias.batch, bias.query, bias.head};
    l.strides.biasKey = bias.key;
  }
  unsigned bytes = dtypeBytes(l.features.dtype);
  l.kvRowAlignment =
      std::min(rowAlignment(l.strides.k, bytes, l.features.varlen),
               rowAlignment(l.strides.v, bytes, l.features.varlen));
  l.device = p.device;
  l.stream = p.stream;
  l.cuSeqlensQ = p.cuSeqlensQ;
  l.cuSeqlensK = p.cuSeqlensK;
  if (p.alibi)
    l.alibiSlopes = l.problem.resolvedAlibiSlopes();
  l.sinks = p.sinks;
  return l;
}
