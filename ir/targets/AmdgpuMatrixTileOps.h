//===- AmdgpuMatrixTileOps.h - Tiles on AMD matrix instructions -----------===//
//
// What MFMA (CDNA) and WMMA (RDNA3/4) tiles share. Both instruction families
// used here compute D (m x m, fp32) = A (m x k) B (k x m) + C over a wave
// whose lanes split into two groups of m lanes (wave64 with m = 32, wave32
// with m = 16): lane l, in group h = l / m, holds row l % m of A, column
// l % m of B and column l % m of C/D. The groups differ in which k (A, B)
// or rows (C, D) they hold; an AmdgpuMatrixInstr says which.
//
// The recipe's products are computed transposed, so that one lane owns one
// query column of every accumulator:
//   S^T = K Q^T       A = K rows (LDS), B = Q^T (registers, or LDS)
//   O^T += V^T P^T    A = V^T rows (LDS), B = P^T from S^T's accumulators
// P^T then needs no trip through LDS: each lane already holds its query's
// probabilities, only in the accumulator's row order, which the instruction
// maps onto B's k order (and V^T's A operand follows the same order; the
// order of a sum's terms is free).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include <memory>

namespace fmhajit {

/// One wave-wide matrix instruction and the lane layout of its operands.
/// A and B operands travel as <kPerLane x i16>, the bits of the dtype's
/// 16-bit elements; C and D as <accPerLane x float>.
class AmdgpuMatrixInstr {
public:
  AmdgpuMatrixInstr(unsigned m, unsigned k, unsigned kPerLane,
                    unsigned accPerLane)
      : m(m), k(k), kPerLane(kPerLane), accPerLane(accPerLane) {}
  virtual ~AmdgpuMatrixInstr();

  const unsigned m;          ///< D is m x m; a lane group is m lanes
  const unsigned k;          ///< the k of one instruction
  const unsigned kPerLane;   ///< A/B elements each lane holds
  const unsigned accPerLane; ///< C/D elements each lane holds

  /// The k of element 0 of lane group \p h's A and B operands; element e
  /// holds k0 + e.
  virtual llvm::Value *operandK0(llvm::IRBuilderBase &b,
                                 llvm::Value *h) const = 0;
  /// The row of accumulator element \p r in lane group \p h.
  virtual llvm::Value *accRow(llvm::IRBuilderBase &b, llvm::Value *h,
                              unsigned r) const = 0;
  /// d = a * b + c.
  virtual llvm::Value *multiply(llvm::IRBuilderBase &b, llvm::Value *a,
                                llvm::Value *bOp, llvm::Value *c) const = 0;
  /// The B operand of k-step \p step (of m / k) of a product whose B is an
  /// accumulator tile: \p acc holds that tile's accPerLane elements as i16
  /// dtype bits. Its k order is the instruction's to choose.
  virtual llvm::Value *accumulatorOperand(llvm::IRBuilderBase &b,
                                          llvm::ArrayRef<llvm::Value *> acc,
                                          unsigned step, llvm::Value *lane,
                                          llvm::Value *h) const = 0;
  /// The A operand matching accumulatorOperand's k order, from one row of a
  /// transposed tile in LDS: \p row points at its k = 0 (i16 elements,
  /// 16-byte aligned).
  virtual llvm::Value *transposedOperand(llvm::IRBuilderBase &b,
                                         llvm::Value *row, unsigned step,
                                         llvm::Value *h) const = 0;
};

/// The tile ops over \p instr for \p target's spec, placed by
/// AmdgpuMatrixLayout (specs/pipelines), which also says where Q lives.
std::unique_ptr<TileOps>
createAmdgpuMatrixTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                          std::unique_ptr<AmdgpuMatrixInstr> instr);

/// \p v (32 bits) of lane `lane ^ mask`, through ds_bpermute_b32.
llvm::Value *amdgpuShuffleXor(llvm::IRBuilderBase &b, llvm::Value *v,
                              llvm::Value *lane, unsigned mask);

/// \p count consecutive i16 at \p p (LDS), as one vector.
llvm::Value *loadI16s(llvm::IRBuilderBase &b, llvm::Value *p, unsigned count);

} // namespace fmhajit
