//===- FuzzSpecs.h - Random specs for the compile fuzz --------------------===//
//
// drawFuzzSpec covers every target, family, pipeline, tile and feature,
// mostly with values the target's table offers (so that most draws
// validate) and sometimes with any value of the key (so that validation's
// refusals are exercised too).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include <cstdint>

namespace fmhajit {

/// Candidate \p attempt for spec number \p index of the sequence \p seed
/// names: a function of the three alone, so that one draw reproduces
/// without the others. Most single candidates break some rule.
KernelSpec drawFuzzSpec(uint64_t seed, uint64_t index, unsigned attempt);

} // namespace fmhajit
