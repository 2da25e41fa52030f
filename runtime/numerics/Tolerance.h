//===- Tolerance.h - How close a kernel's output must be to the reference -===//
//
// One table, per output dtype, of the errors a correct kernel may show
// against the float64 reference on the same rounded inputs. Tolerances are
// relative to the reference's scale so they hold for every shape: a wrong
// mask, a missed tile or a bad softmax rescale is off by far more.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"

namespace fmhajit {

struct Tolerance {
  double relL2;  ///< ||o - ref||_2 / ||ref||_2
  double maxAbs; ///< max |o - ref| / max |ref|
  double lseRel; ///< max |lse - ref| / max(1, |ref|); -inf must match
};

/// The tolerance for outputs of \p outType (fp32, fp16 or bf16).
Tolerance toleranceFor(DType outType);
/// The tolerance for a kernel with inputs of \p inType: fp8 inputs have
/// their own row, whatever \p outType; others take the looser of the rows
/// of \p inType and \p outType (products may round P to the input dtype).
Tolerance toleranceFor(DType inType, DType outType);

/// The tolerance of gradients (dQ, dK, dV) in \p outType from inputs of
/// \p inType: looser than the forward's, since D is formed from O as stored
/// and dS = P (dP - D) cancels; 16-bit inputs as toleranceFor(in, out).
Tolerance backwardToleranceFor(DType inType, DType outType);

} // namespace fmhajit
