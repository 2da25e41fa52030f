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

#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include "specs/ArchTable.h"
#include "specs/pipelines/AmdgpuMatrixLayout.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"
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

/// \p v (32 bits) of lane `lane ^ mask`, through ds_bpermute_b32.
llvm::Value *amdgpuShuffleXor(llvm::IRBuilderBase &b, llvm::Value *v,
                              llvm::Value *lane, unsigned mask);

/// \p count consecutive i16 at \p p (LDS), as one vector.
llvm::Value *loadI16s(llvm::IRBuilderBase &b, llvm::Value *p, unsigned count);

/// pipeline=mfma and wmma's tile ops (the .cpp says how they work), declared
/// here so that the backward's (AmdgpuBackwardTileOps.cpp) can build on them.
class AmdgpuMatrixTileOps : public TileOps {
public:
  AmdgpuMatrixTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                      std::unique_ptr<AmdgpuMatrixInstr> instruction,
                      unsigned ldsBytes)
      : b(b), target(target), spec(target.kernelSpec()),
        layout(spec, *findArch(spec.target)), instr(std::move(instruction)),
        m(instr->m), nTiles(layout.queryTilesPerWave),
        elem(elementType(b.getContext(), spec.dtype)) {
    assert(instr->m == layout.m && instr->k == layout.k &&
           "the instruction is the one the table's shape names");
    if (ldsBytes) // the backward's bwd_dot_do_o and bwd_convert_dq use none
      smem = target.sharedMemory(b, ldsBytes);
    llvm::Value *tid = target.threadId(b);
    lane = b.CreateAnd(tid, b.getInt32(target.waveSize() - 1));
    col = b.CreateAnd(lane, b.getInt32(m - 1));
    h = b.CreateLShr(lane, b.getInt32(llvm::Log2_32(m)));
    llvm::Value *wave =
        b.CreateLShr(tid, b.getInt32(llvm::Log2_32(target.waveSize())));
    q0 = b.CreateMul(wave, b.getInt32(nTiles * m));
  }

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const llvm::Twine &name) override {
    switch (role) {
    case TileRole::Query:
      if (layout.queryInShared)
        return {role, rows, cols, shared(layout.query)};
      return {
          role, rows, cols,
          entryAlloca(b, operandType(), name, 16, nTiles * (cols / instr->k))};
    case TileRole::KeyT: // K rows: cols (keys) x rows (d)
      return {role, rows, cols, shared(layout.keys)};
    case TileRole::Value: // V^T rows: cols (dv) x rows (keys)
      return {role, rows, cols, shared(layout.valuesT)};
    case TileRole::Scores:
    case TileRole::Output:
      return {role, rows, cols,
              entryAlloca(b, b.getFloatTy(), name, 4, accCount(cols))};
    default: // the backward's roles: AmdgpuBackwardTileOps
      break;
    }
    llvm_unreachable("unknown tile role");
  }
  RowVec makeRowVec(unsigned rows, const llvm::Twine &name) override {
    return {rows, entryAlloca(b, b.getFloatTy(), name, 4, nTiles)};
  }

  void fill(Tile &t, float value) override {
    assert((t.role == TileRole::Scores || t.role == TileRole::Output) &&
           "fill accumulators");
    for (unsigned e = 0; e < accCount(t.cols); ++e)
      b.CreateStore(f32(value), slot(t.storage, e));
  }
  void fill(RowVec &r, float value) override {
    for (unsigned j = 0; j < nTiles; ++j)
      b.CreateStore(f32(value), slot(r.storage, j));
  }

  void load(Tile &t, const GlobalRows &src, llvm::Value *valid,
            llvm::Value *scale) override;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override;
  void map(Tile &t, ElementFn fn) override;
  void mapWithRow(Tile &t, const RowVec &row, WithRowFn fn) override;
  void reduceRows(const Tile &t, RowVec &out, bool isMax) override;
  void mapRows(RowVec &out, llvm::ArrayRef<const RowVec *> in,
               RowFn fn) override;
  void store(const Tile &t, const GlobalRows &dst, llvm::Value *valid) override;
  void store(const RowVec &r, const GlobalRows &dst,
             llvm::Value *valid) override;

protected:
  llvm::Value *f32(float v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }
  llvm::Type *operandType() {
    return llvm::FixedVectorType::get(b.getInt16Ty(), instr->kPerLane);
  }
  /// Element \p i of a register array (an alloca SROA turns into registers).
  llvm::Value *slot(llvm::Value *base, unsigned i) {
    return b.CreateConstInBoundsGEP1_32(
        llvm::cast<llvm::AllocaInst>(base)->getAllocatedType(), base, i);
  }
  /// \p tile's first byte in LDS; its pitch is then pitchOf(it).
  llvm::Value *shared(const SharedTile &tile) {
    llvm::Value *p =
        b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, tile.offset);
    pitches[p] = tile.pitch;
    return p;
  }
  /// The row pitch (elements) of an LDS tile made by shared().
  unsigned pitchOf(llvm::Value *storage) const {
    assert(pitches.count(storage) && "not an LDS tile");
    return pitches.lookup(storage);
  }
  /// Blocks of m rows covering \p n accumulator rows (keys or dv).
  unsigned blocks(unsigned n) const { return llvm::divideCeil(n, m); }
  unsigned accCount(unsigned n) const {
    return blocks(n) * nTiles * instr->accPerLane;
  }
  unsigned accIndex(unsigned i, unsigned j, unsigned r) const {
    return (i * nTiles + j) * instr->accPerLane + r;
  }
  /// The lane's query in query tile \p j, relative to the tile's first row.
  llvm::Value *queryRow(unsigned j) {
    return b.CreateAdd(q0, b.CreateAdd(col, b.getInt32(j * m)));
  }
  /// The logical column (key or dv) of accumulator element (i, r).
  llvm::Value *accColumn(unsigned i, unsigned r) {
    return b.CreateAdd(b.getInt32(i * m), instr->accRow(b, h, r));
  }
  /// Calls fn(i, j, r) for every accumulator element of a tile of \p n rows.
  void forEachAcc(unsigned n,
                  llvm::function_ref<void(unsigned, unsigned, unsigned)> fn) {
    for (unsigned i = 0; i < blocks(n); ++i)
      for (unsigned j = 0; j < nTiles; ++j)
        for (unsigned r = 0; r < instr->accPerLane; ++r)
          fn(i, j, r);
  }
  /// The lane's operand of k-step \p s from LDS rows of \p pitch elements:
  /// row \p row, elements s*k + k0(h) onwards.
  llvm::Value *sharedOperand(llvm::Value *tile, unsigned pitch,
                             llvm::Value *row, unsigned s) {
    llvm::Value *c =
        b.CreateAdd(b.getInt32(s * instr->k), instr->operandK0(b, h));
    llvm::Value *index = b.CreateAdd(b.CreateMul(row, b.getInt32(pitch)), c);
    return loadI16s(b, b.CreateInBoundsGEP(b.getInt16Ty(), tile, index),
                    instr->kPerLane);
  }
  llvm::Value *queryOperand(const Tile &q, unsigned j, unsigned s) {
    if (layout.queryInShared)
      return sharedOperand(q.storage, pitchOf(q.storage), queryRow(j), s);
    return b.CreateLoad(operandType(),
                        slot(q.storage, j * (q.cols / instr->k) + s));
  }
  llvm::Value *toBits(llvm::Value *x) {
    return b.CreateBitCast(b.CreateFPTrunc(x, elem), b.getInt16Ty());
  }

  void beginSharedLoad();
  void loadQueryFragments(Tile &t, const GlobalRows &src, llvm::Value *valid);
  /// \p rows source rows of \p width elements into LDS rows at \p dst.
  void copyRows(llvm::Value *dst, unsigned rows, unsigned width,
                const GlobalRows &src, llvm::Value *valid);
  /// \p rows source rows (even) of \p width elements into LDS at \p dst,
  /// transposed: \p width rows of \p rows elements.
  void copyTransposed(llvm::Value *dst, unsigned rows, unsigned width,
                      const GlobalRows &src, llvm::Value *valid);
  /// Where a load into LDS starts and ends (see load).
  void endSharedLoad();
  llvm::Value *loadChunk(const GlobalRows &src, llvm::Value *row,
                         llvm::Value *c, llvm::Value *valid);
  void scoresProduct(Tile &acc, const Tile &q, const Tile &kT);
  void outputProduct(Tile &acc, const Tile &p, const Tile &v);

  llvm::IRBuilderBase &b;
  GpuTargetInfo &target;
  const KernelSpec &spec;
  AmdgpuMatrixLayout layout;
  std::unique_ptr<AmdgpuMatrixInstr> instr;
  unsigned m, nTiles;
  llvm::Type *elem;
  llvm::Value *smem = nullptr, *lane, *col, *h, *q0;
  bool copiesPending = false; ///< LDS copies no barrier has published yet
  llvm::BasicBlock *loadEndBlock = nullptr; ///< where the last load ended ...
  size_t loadEndSize = 0;                   ///< ... and how long that block was
  llvm::DenseMap<llvm::Value *, llvm::Value *>
      queryScale; ///< Query storage -> its deferred scale
  llvm::DenseMap<llvm::Value *, unsigned> pitches; ///< LDS tile -> pitch
};

/// The tile ops over \p instr for \p target's spec, placed by
/// AmdgpuMatrixLayout (specs/pipelines), which also says where Q lives.
std::unique_ptr<TileOps>
createAmdgpuMatrixTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                          std::unique_ptr<AmdgpuMatrixInstr> instr);

/// The backward's tile ops (AmdgpuBackwardTileOps.cpp) over \p instr,
/// placed by AmdgpuBackwardLayout (specs/pipelines).
std::unique_ptr<TileOps>
createAmdgpuBackwardTileOps(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                            std::unique_ptr<AmdgpuMatrixInstr> instr);

} // namespace fmhajit
