//===- HostAmx.h - The host products on AMX tiles (AMX-BF16) --------------===//
//
// On CPUs with AMX (Sapphire Rapids and later), a bf16 kernel's products run
// on the tile unit: tdpbf16ps multiplies a 16 x 32 bf16 tile by a 32 x 16
// one into 16 x 16 fp32 accumulators, 16 times an AVX-512 FMA's work per
// instruction. The host tiles stay fp32 buffers (HostTileOps.cpp); each
// product rounds its two operands to bf16 into packed copies first:
//   A'[M][K]  row-major, K contiguous (the tile unit's left operand)
//   B'[K][N]  as K/2 rows of N pairs (k even, k odd): the "VNNI" layout of
//             its right operand
// then walks acc in blocks of up to 2 x 2 tiles (8 tile registers: 4
// accumulators, 2 left and 2 right operands), all of K unrolled:
//   C[r][c] = tileloadd acc (or tilezero)
//   for each 32 of K: A[r] = tileloadd A', B[c] = tileloadd B',
//                     C[r][c] = tdpbf16ps C[r][c], A[r], B[c]
//   tilestored C[r][c] -> acc
// LLVM's AMX passes write the tile configuration (ldtilecfg) and release
// the tiles (tilerelease) at the kernel's end.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// One product acc[M][N] (+)= A'[M][K] B'[K][N] over fp32 buffers:
/// A'(m, k) = a[m * strideM + k * strideK] and B' row-major at \p bRows.
/// Only acc's first mEnd rows and nEnd columns (i64, multiples of
/// amxBlockRows and amxBlockCols) are computed.
struct AmxProduct {
  llvm::Value *acc;
  unsigned M, N, K;
  llvm::Value *a;
  unsigned strideM, strideK;
  llvm::Value *bRows;
  llvm::Value *mEnd, *nEnd;
  bool accumulate; ///< acc += (else acc =)
};

/// Rows and columns of acc one block of accumulator tiles covers (32 where
/// the extent allows two tiles, else 16).
unsigned amxBlockRows(unsigned M);
unsigned amxBlockCols(unsigned N);

/// Buffers for \p p's packed operands (in the kernel's frame).
llvm::Value *amxLeftBuffer(llvm::IRBuilderBase &b, const AmxProduct &p);
llvm::Value *amxRightBuffer(llvm::IRBuilderBase &b, const AmxProduct &p);
/// A' and B' of \p p rounded to bf16 and packed into those buffers.
void emitAmxPackLeft(llvm::IRBuilderBase &b, const AmxProduct &p,
                     llvm::Value *left);
void emitAmxPackRight(llvm::IRBuilderBase &b, const AmxProduct &p,
                      llvm::Value *right);
/// The address of bf16 row \p row (i64) of an operand in memory.
using AmxRowFn = llvm::function_ref<llvm::Value *(llvm::Value *row)>;
/// A' (\p p.M rows of \p p.K) or B' (\p p.K rows of \p p.N) packed straight
/// from bf16 rows in memory, every row present: A' is their copy, B' their
/// pairs interleaved; no fp32 buffer, no rounding.
void emitAmxPackLeftFromRows(llvm::IRBuilderBase &b, const AmxProduct &p,
                             llvm::Value *left, AmxRowFn row);
void emitAmxPackRightFromRows(llvm::IRBuilderBase &b, const AmxProduct &p,
                              llvm::Value *right, AmxRowFn row);
/// \p p on the tile unit from packed operands (the sketch above). M, N and
/// K are multiples of 16 (validation's tile_multiple and head dims).
void emitAmxMultiply(llvm::IRBuilderBase &b, const AmxProduct &p,
                     llvm::Value *left, llvm::Value *right);

} // namespace fmhajit
