//===- NvptxWgmma.h - sm_90a's warpgroup MMA as IR ------------------------===//
//
// LLVM 22 has intrinsics for wgmma's fence, commit and wait but not for
// wgmma.mma_async itself, so the product is inline PTX. Its accumulators are
// SSA values tied to the instruction's outputs ("=f" ... "0", "1", ...), and
// the wait is inline PTX tied to the accumulators it waits for: nothing can
// read (or redefine) an accumulator between the product and its wait, which
// ptxas would otherwise answer by serializing the tensor cores (C7515).
//
//   call void @llvm.nvvm.wgmma.fence.sync.aligned()
//   %d = call {float x N/2} asm sideeffect "wgmma.mma_async.sync.aligned.
//            m64n<N>k16.f32.bf16.bf16 {$0..}, $a, $b, $p, 1, 1, 0, <tB>;",
//            (fp8: m64n<N>k32.f32.e4m3.e4m3 ..., $p, 1, 1; no transposes)
//            "=f,...,l,l,b,0,1,..."(i64 %descA, i64 %descB, i1 %acc, ...)
//   call void @llvm.nvvm.wgmma.commit_group.sync.aligned()
//   %w = call {float x ...} asm sideeffect "wgmma.wait_group.sync.aligned 0;",
//            "=f,...,0,1,..."(%d...)
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// How a shared-memory operand is laid out for a matrix descriptor: swizzled
/// slabs of rows of \p swizzleBytes (specs/pipelines/WgmmaLayout.h).
struct WgmmaOperand {
  /// A slab row's bytes and the swizzle's width: 128, 64 or 32.
  unsigned swizzleBytes = 128;
  /// Bytes between the starts of consecutive slabs along the instruction's
  /// M or N dimension (MN-major operands; K-major ones ignore it).
  unsigned leadingBytes = 16;

  /// Bytes between consecutive 8-row groups: one swizzle atom.
  unsigned strideBytes() const { return 8 * swizzleBytes; }
};

/// The low word (i32) of the matrix descriptor of \p op starting at shared
/// address \p start (i32, 16-byte aligned, in a 1024-byte aligned atom).
llvm::Value *wgmmaDescriptorLow(llvm::IRBuilderBase &b, llvm::Value *start,
                                const WgmmaOperand &op);
/// The 64-bit descriptor of \p op moved \p byteOffset (a multiple of 16)
/// from the one whose low word is \p low: the start address is the low
/// word's low bits, and stays under 2^18 bytes, so moving it is one add.
llvm::Value *wgmmaDescriptorAt(llvm::IRBuilderBase &b, llvm::Value *low,
                               unsigned byteOffset, const WgmmaOperand &op);

/// The byte offset of element (\p row, \p col) (i32 values) in a tile of
/// \p rows rows stored as swizzled slabs of \p slabBytes bytes a row
/// (specs/pipelines/WgmmaLayout.h), \p elementBytes an element: the W-byte
/// swizzle XORs a 16-byte chunk's index in its slab row with the address
/// bits just above the row's 128 bytes.
llvm::Value *swizzledOffset(llvm::IRBuilderBase &b, llvm::Value *row,
                            llvm::Value *col, unsigned rows, unsigned slabBytes,
                            unsigned elementBytes);

/// The low word of \p op's descriptor at \p address (a shared pointer)
/// plus \p extra bytes (null: none), copied opaquely where the product
/// runs: the per-step descriptors are this plus constants, and LICM would
/// otherwise hoist each of them out of the loop into registers of its own.
llvm::Value *wgmmaDescriptorBase(llvm::IRBuilderBase &b, llvm::Value *address,
                                 llvm::Value *extra, const WgmmaOperand &op);

/// Bytes from a K-major operand's start (\p rows rows) to step \p kk, which
/// covers bytes 32 kk.. of each row: slab 32 kk / (slab width), at an
/// offset inside the swizzled row (the tensor cores apply the swizzle).
unsigned kMajorStepOffset(const WgmmaOperand &op, unsigned rows, unsigned kk);

/// Orders earlier register writes (accumulators, A fragments) before the
/// products that follow.
void emitWgmmaFence(llvm::IRBuilderBase &b);
/// Closes the group of products issued since the last commit.
void emitWgmmaCommit(llvm::IRBuilderBase &b);

/// One m64nNk16 product (m64nNk32 for fp8), N = 2 * acc.size(): returns
/// D = A B (+ acc when \p accumulate; acc is then tied, else ignored). A
/// comes from the shared descriptor \p descA (K-major, or MN-major with
/// \p transposeA), B from \p descB (fp8: both K-major, no transposes).
llvm::SmallVector<llvm::Value *, 128>
emitWgmmaShared(llvm::IRBuilderBase &b, DType dtype,
                llvm::ArrayRef<llvm::Value *> acc, bool accumulate,
                llvm::Value *descA, llvm::Value *descB, bool transposeB,
                bool transposeA = false);

/// The same with A from registers: four i32 of this warp's 16 rows, packed
/// 16-bit pairs (the m16n8k16 A fragment) or, for fp8, four 8-bit values
/// each (the m16n8k32 one). \p typeA and \p typeB are both 16-bit and
/// equal, or both fp8.
llvm::SmallVector<llvm::Value *, 128>
emitWgmmaRegisters(llvm::IRBuilderBase &b, DType typeA, DType typeB,
                   llvm::ArrayRef<llvm::Value *> acc, bool accumulate,
                   llvm::ArrayRef<llvm::Value *> a, llvm::Value *descB,
                   bool transposeB);

/// Fences, issues and commits \p steps products that multiply A (\p aRows
/// rows from the descriptor whose low word is \p aBase) by B^T (\p bRows rows
/// from \p bBase), both K-major in \p op's slabs, each step 32 bytes of K:
/// S = Q K^T in the forward, S^T = K Q^T and dP^T = V dO^T in the backward.
/// Returns the \p outs accumulators, not yet waited for.
llvm::SmallVector<llvm::Value *, 128>
emitKMajorProducts(llvm::IRBuilderBase &b, DType dtype, const WgmmaOperand &op,
                   llvm::Value *aBase, unsigned aRows, llvm::Value *bBase,
                   unsigned bRows, unsigned steps, unsigned outs);

/// Waits until at most \p pending groups are in flight; returns \p live
/// (accumulators of those groups' products) as defined after the wait.
llvm::SmallVector<llvm::Value *, 128>
emitWgmmaWait(llvm::IRBuilderBase &b, unsigned pending,
              llvm::ArrayRef<llvm::Value *> live);

} // namespace fmhajit
