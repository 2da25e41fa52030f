//===- KernelSpec.h - What a user asks for: one attention kernel ----------===//
//
// A KernelSpec describes one kernel: family, dtypes, head dims, score
// modifiers, tile shape and target, one field per spec key (SpecKeys.def).
// Fields left at their "unset" value (0, Pipeline::Auto, no `out`) take the
// target's defaults when the spec is resolved by validateSpec(); only
// resolved specs have encoded names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fmhajit {

enum class Family : uint8_t {
  Fwd,
  FwdSplitKv,
  SplitKvCombine,
  FwdPaged,
  AppendKv,
  BwdDotDoO,
  BwdDqDkDv,
  BwdConvertDq,
};

enum class DType : uint8_t { F32, F16, BF16, F8E4M3, F8E5M2 };

enum class Mask : uint8_t {
  None,
  Causal,   ///< key j visible to query i iff j <= i (top-left aligned)
  CausalBr, ///< j <= i + Sk - Sq (bottom-right aligned)
  Window,   ///< sliding window, (left, right) given at run time
};

enum class Bias : uint8_t { None, Alibi, Elementwise };

enum class Pipeline : uint8_t { Auto, Vector, Simt, Mma, Wgmma, Mfma, Wmma };

/// Which user-written variant (score_mod/mask_mod in C++, docs/variants.md)
/// the kernel applies: the content hash of its source as kVariantHashDigits
/// lowercase hex digits, or empty for none. specs/ carries only the hash;
/// compiler/variants/ turns the source into code.
struct VariantHash {
  std::string hex;

  bool empty() const { return hex.empty(); }
  friend bool operator==(const VariantHash &a, const VariantHash &b) {
    return a.hex == b.hex;
  }
  friend bool operator!=(const VariantHash &a, const VariantHash &b) {
    return !(a == b);
  }
};
inline constexpr unsigned kVariantHashDigits = 16;
/// Whether \p hex is a variant hash: kVariantHashDigits of [0-9a-f].
bool isVariantHash(const std::string &hex);

/// One field per spec key, each named as its key: see SpecKeys.def for the
/// keys, their types, defaults and meaning.
struct KernelSpec {
#define SPEC_KEY(Name, Type, Default, Help) Type Name = Default;
#include "specs/SpecKeys.def"

  /// The output dtype, resolving the default.
  DType outType() const;
  /// The V head dim, resolving the default.
  unsigned headDimV() const { return dv ? dv : d; }

  friend bool operator==(const KernelSpec &a, const KernelSpec &b);
  friend bool operator!=(const KernelSpec &a, const KernelSpec &b) {
    return !(a == b);
  }
};

/// Bytes of one element of \p t.
unsigned dtypeBytes(DType t);
bool isFp8(DType t);

} // namespace fmhajit
