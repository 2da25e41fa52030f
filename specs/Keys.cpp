//===- Keys.cpp - The spellings of spec keys and values -------------------===//
#include "specs/Keys.h"
#include "llvm/ADT/STLExtras.h"

using namespace fmhajit;
using llvm::ArrayRef;
using llvm::StringRef;

static const Spelling<Family> kFamilies[] = {
    {Family::Fwd, "fwd", "fwd"},
    {Family::FwdSplitKv, "fwd_splitkv", "fwdsplitkv"},
    {Family::SplitKvCombine, "splitkv_combine", "splitkvcombine"},
    {Family::FwdPaged, "fwd_paged", "fwdpaged"},
    {Family::AppendKv, "append_kv", "appendkv"},
    {Family::BwdDotDoO, "bwd_dot_do_o", "bwddotdoo"},
    {Family::BwdDqDkDv, "bwd_dq_dk_dv", "bwddqdkdv"},
    {Family::BwdConvertDq, "bwd_convert_dq", "bwdconvertdq"},
};
static const Spelling<DType> kDTypes[] = {
    {DType::F32, "fp32", "fp32"},        {DType::F16, "fp16", "fp16"},
    {DType::BF16, "bf16", "bf16"},       {DType::F8E4M3, "fp8_e4m3", "e4m3"},
    {DType::F8E5M2, "fp8_e5m2", "e5m2"},
};
static const Spelling<Mask> kMasks[] = {
    {Mask::None, "none", "nomask"},
    {Mask::Causal, "causal", "causal"},
    {Mask::CausalBr, "causal_br", "causalbr"},
    {Mask::Window, "window", "window"},
};
static const Spelling<Bias> kBiases[] = {
    {Bias::None, "none", "nobias"},
    {Bias::Alibi, "alibi", "alibi"},
    {Bias::Elementwise, "elementwise", "elembias"},
};
static const Spelling<Pipeline> kPipelines[] = {
    {Pipeline::Auto, "auto", "auto"},    {Pipeline::Vector, "vector", "vector"},
    {Pipeline::Simt, "simt", "simt"},    {Pipeline::Mma, "mma", "mma"},
    {Pipeline::Wgmma, "wgmma", "wgmma"}, {Pipeline::Mfma, "mfma", "mfma"},
    {Pipeline::Wmma, "wmma", "wmma"},
};

ArrayRef<Spelling<Family>> fmhajit::familySpellings() { return kFamilies; }
ArrayRef<Spelling<DType>> fmhajit::dtypeSpellings() { return kDTypes; }
ArrayRef<Spelling<Mask>> fmhajit::maskSpellings() { return kMasks; }
ArrayRef<Spelling<Bias>> fmhajit::biasSpellings() { return kBiases; }
ArrayRef<Spelling<Pipeline>> fmhajit::pipelineSpellings() { return kPipelines; }

namespace {
template <typename E> ArrayRef<Spelling<E>> spellings();
template <> ArrayRef<Spelling<Family>> spellings() { return kFamilies; }
template <> ArrayRef<Spelling<DType>> spellings() { return kDTypes; }
template <> ArrayRef<Spelling<Mask>> spellings() { return kMasks; }
template <> ArrayRef<Spelling<Bias>> spellings() { return kBiases; }
template <> ArrayRef<Spelling<Pipeline>> spellings() { return kPipelines; }
} // namespace

template <typename E> StringRef fmhajit::keyOf(E v) {
  for (const auto &s : spellings<E>())
    if (s.value == v)
      return s.key;
  llvm_unreachable("enum value without a spelling");
}

template <typename E> StringRef fmhajit::tokenOf(E v) {
  for (const auto &s : spellings<E>())
    if (s.value == v)
      return s.token;
  llvm_unreachable("enum value without a spelling");
}

template <typename E> std::optional<E> fmhajit::parseKey(StringRef str) {
  for (const auto &s : spellings<E>())
    if (str == s.key)
      return s.value;
  return std::nullopt;
}

template <typename E> std::optional<E> fmhajit::parseToken(StringRef str) {
  for (const auto &s : spellings<E>())
    if (str == s.token)
      return s.value;
  return std::nullopt;
}

template <typename E> std::string fmhajit::allKeys() {
  std::string out;
  for (const auto &s : spellings<E>())
    out += (out.empty() ? "" : ", ") + std::string(s.key);
  return out;
}

#define FMHAJIT_INSTANTIATE(E)                                                 \
  template StringRef fmhajit::keyOf<E>(E);                                     \
  template StringRef fmhajit::tokenOf<E>(E);                                   \
  template std::optional<E> fmhajit::parseKey<E>(StringRef);                   \
  template std::optional<E> fmhajit::parseToken<E>(StringRef);                 \
  template std::string fmhajit::allKeys<E>();
FMHAJIT_INSTANTIATE(Family)
FMHAJIT_INSTANTIATE(DType)
FMHAJIT_INSTANTIATE(Mask)
FMHAJIT_INSTANTIATE(Bias)
FMHAJIT_INSTANTIATE(Pipeline)
