//===- VariantLanes.h - A variant function widened to vector lanes --------===//
//
// The host's tiles are vectors, so its element callbacks see <L x float>
// scores and <L x i32> positions. A variant's score_mod and mask_mod take
// scalars; calling them lane by lane left L copies of scalar code that the
// SLP vectorizer did not join (the tanh soft-cap variant ran 2.7x the
// built-in's time on the host). laneVersion() makes the vector function
// itself: each instruction of the variant's one block becomes its vector
// form (arithmetic, compares, selects, casts and the vectorizable
// intrinsics), and whatever has none (a tensor read's address and load)
// is done lane by lane inside it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/Function.h"

namespace fmhajit {

/// \p fn with every float and i32 parameter and its result widened to
/// \p lanes lanes (pointer parameters stay scalar), defined once in fn's
/// module beside it; null where fn is not one straight block (the caller
/// then calls fn lane by lane).
llvm::Function *laneVersion(llvm::Function &fn, unsigned lanes);

/// Whether \p fn is a lane version of a variant function (inlineVariant
/// treats it as one of the variant's functions).
bool isLaneVersion(const llvm::Function &fn);

} // namespace fmhajit
