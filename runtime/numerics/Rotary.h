//===- Rotary.h - Rotary position embedding: forms, tables, reference -----===//
//
// append_kv rotates the leading rotaryDim elements of each new K (and Q) row
// by its position pos in the sequence (cache length + row), pair by pair:
//   y[e0] = x[e0] cos - x[e1] sin;  y[e1] = x[e1] cos + x[e0] sin
// with cos = cosTable[pos][k], sin = sinTable[pos][k] for pair k, and
//   interleaved (GPT-J):      (e0, e1) = (2k, 2k + 1)
//   half-rotated (GPT-NeoX):  (e0, e1) = (k, k + rotaryDim / 2)
// Elements past rotaryDim are copied. Tables are fp32 [positions,
// rotaryDim / 2]; makeRotaryTables builds the usual ones from a base.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <vector>

namespace fmhajit {

enum class RotaryForm { None, Interleaved, Half };

/// "none", "interleaved" or "half".
llvm::StringRef rotaryFormName(RotaryForm form);
/// The form named \p name ("interleaved", "half", "none"), if any.
std::optional<RotaryForm> parseRotaryForm(llvm::StringRef name);

/// cos/sin tables, fp32, row-major [positions, dim / 2].
struct RotaryTables {
  int64_t positions = 0, dim = 0;
  std::vector<float> cos, sin;
};

/// The tables of RoPE with frequency base \p base: angle(pos, k) =
/// pos * base^(-2k / dim), evaluated in double and rounded once.
RotaryTables makeRotaryTables(int64_t positions, int64_t dim,
                              double base = 10000.0);

/// The reference rotation of one row \p x (d elements) at position \p pos,
/// in double: the kernel's formula above, without its fp32 rounding.
std::vector<double> rotateRowReference(llvm::ArrayRef<float> x, RotaryForm form,
                                       const RotaryTables &tables, int64_t pos);

} // namespace fmhajit
