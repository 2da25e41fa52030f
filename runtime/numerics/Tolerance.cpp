//===- Tolerance.cpp - The per-dtype tolerance table ----------------------===//
#include "runtime/numerics/Tolerance.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>

using namespace fmhajit;

namespace {
struct ToleranceRow {
  DType type;
  Tolerance tolerance;
};
} // namespace

// Why these numbers. Inputs are the same rounded values for kernel and
// reference, so only the kernel's arithmetic and output rounding differ.
//
// fp32: the kernel accumulates Q.K and P.V in fp32 (unit roundoff 6e-8) and
//   uses a fast exp2 polynomial with ~1e-7 relative error. Rescales of the
//   online softmax hit numerator and denominator alike and cancel; what is
//   left grows like eps * sqrt(Sk) in the P.V sums, ~4e-6 at Sk = 8192. 2e-5
//   keeps a 5x margin and is still 100x below any real bug.
// fp16: dominated by rounding O to fp16, at most 2^-11 (4.9e-4) of |o| and
//   ~2.8e-4 RMS; GPU pipelines also round P to fp16 before P.V, which adds
//   about as much again. Hence 2e-3 RMS and 4e-3 of max|ref| per element.
// bf16: the same with 2^-8 precision: rounding O costs at most 2^-9 (2e-3)
//   of |o| and ~1.1e-3 RMS, P rounded to bf16 as much again: 1e-2 and 2e-2.
// lse: written in fp32 by every dtype from fp32 row maxima and sums (16-bit
//   products are exact in fp32, and P's rounding never reaches the sum), so
//   its error is a few fp32 ulps of max(1, |lse|) plus the exp2/log2
//   approximations' ~1e-7: 1e-5 for all three.
// fp8 inputs (any output dtype): the products see the inputs exactly, but
//   P is rounded to e4m3 for P.V, 3 mantissa bits: at most 2^-4 (6.3%) of
//   each p, ~3% RMS. Each element of O sums p_j v_j with independent
//   errors, so O's relative RMS error is about P's, whatever Sk: 6e-2 RMS,
//   and 1e-1 of max|ref| per element (O's largest errors are on elements
//   well below the maximum). The LSE comes from the scores, which the fp8
//   tensor cores accumulate with about 14 bits of mantissa rather than
//   fp32's 24 (DeepSeek-V3 report, section 3.3.2). The LSE is a smooth
//   maximum, so its error is at most the largest score's: about 2^-13 of
//   scale * sum_i |q_i k_i|, ~9e-4 for unit-normal inputs at d = 128
//   (scale 1/sqrt(128), sum ~82). An H100 showed 2e-5 to 5e-5 (d=128,
//   causal, 397-2100 keys, `fmhajit run --check`) and 2.7e-4 and 3.0e-4 in
//   the e2e suite's varlen rows of up to 2100 keys: 1e-3.
static const Tolerance kFp8InputTolerance = {
    /*relL2=*/6e-2, /*maxAbs=*/1e-1, /*lseRel=*/1e-3};

static const ToleranceRow kTolerances[] = {
    {DType::F32, {/*relL2=*/2e-5, /*maxAbs=*/1e-4, /*lseRel=*/1e-5}},
    {DType::F16, {/*relL2=*/2e-3, /*maxAbs=*/4e-3, /*lseRel=*/1e-5}},
    {DType::BF16, {/*relL2=*/1e-2, /*maxAbs=*/2e-2, /*lseRel=*/1e-5}},
};

Tolerance fmhajit::toleranceFor(DType outType) {
  for (const ToleranceRow &row : kTolerances)
    if (row.type == outType)
      return row.tolerance;
  llvm_unreachable("no tolerance for this output dtype");
}

/// The looser of two tolerances, field by field.
static Tolerance looser(Tolerance x, Tolerance y) {
  return {std::max(x.relL2, y.relL2), std::max(x.maxAbs, y.maxAbs),
          std::max(x.lseRel, y.lseRel)};
}

// 16-bit inputs with a wider output (bf16 -> fp32): the products may round
// P (and the backward's dS) to the input dtype, as the GPU pipelines and the
// host's AMX tiles do, so the outputs are only as exact as that dtype's row.
Tolerance fmhajit::toleranceFor(DType inType, DType outType) {
  if (isFp8(inType))
    return kFp8InputTolerance;
  return looser(toleranceFor(inType), toleranceFor(outType));
}

// Why these numbers. The reference is exact on the rounded inputs; the
// kernel's dQ, dK, dV differ by fp32 accumulation over Sq or Sk terms, the
// exp2 polynomial, the output rounding, and D = rowsum(dO * O) formed from
// O as the forward stored it (rounded to the out dtype). Measured on the
// e2e cases and at S = 2048: fp32 about 1e-6 RMS (1e-4 leaves room for
// longer sums and is still far below a wrong mask or a missed tile, which
// cost 1e-1 or more); fp16 2.4e-4 and bf16 1.9e-3 RMS, under the forward's
// tolerances for those dtypes, which the gradients keep.
static Tolerance gradientRowFor(DType outType) {
  switch (outType) {
  case DType::F32:
    return {/*relL2=*/1e-4, /*maxAbs=*/5e-4, /*lseRel=*/0};
  default:
    return toleranceFor(outType);
  }
}

Tolerance fmhajit::backwardToleranceFor(DType inType, DType outType) {
  return looser(gradientRowFor(inType), gradientRowFor(outType));
}
