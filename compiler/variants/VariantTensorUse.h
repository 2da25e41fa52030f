//===- VariantTensorUse.h - The tensor slots a variant reads --------------===//
//
// A variant reads run-time tensors with fmhajit_tensor(slot, index), the
// slot a constant (docs/variants.md#run-time-tensors). Which slots each of
// its functions reads is known once the variant is checked, before any
// tensor exists: a run must give that many tensors, and a mask_mod that
// reads one cannot be evaluated at plan time for the block map.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace fmhajit {

/// Bit s is set where the function reads slot s.
struct VariantTensorUse {
  unsigned scoreMod = 0, maskMod = 0;

  /// The tensors a run gives: one past the highest slot read, since they
  /// are given in slot order (an unread slot below it still takes one).
  unsigned count() const {
    unsigned all = scoreMod | maskMod, n = 0;
    while (all >> n)
      ++n;
    return n;
  }

  /// "slot 0 (score_mod), slot 2 (score_mod, mask_mod)"; "no tensor".
  std::string describe() const {
    std::string text;
    for (unsigned s = 0; s < count(); ++s) {
      bool score = scoreMod >> s & 1, mask = maskMod >> s & 1;
      if (!score && !mask)
        continue;
      text += (text.empty() ? "slot " : ", slot ") + std::to_string(s) +
              (score && mask ? " (score_mod, mask_mod)"
               : score       ? " (score_mod)"
                             : " (mask_mod)");
    }
    return text.empty() ? "no tensor" : text;
  }
};

} // namespace fmhajit
