//===- AmdgpuBackwardTileOps.cpp - The backward on mfma and wmma ----------===//
//
// The words of the backward recipe (ir/BackwardKernel.cpp) on the forward's
// AMD matrix tiles (AmdgpuMatrixTileOps.h), placed by AmdgpuBackwardLayout
// (specs/pipelines, which sketches the data flow):
//  - S^T = K Q^T and dP^T = V dO^T are the forward's scores product, with K
//    and V rows in LDS; S, P, dP and dS stay fp32 accumulators, a lane per
//    query, so masks, the LSE and D (loadRows) read as in the forward.
//  - transposed(S) writes the tile as dtype bits into its LDS copy
//    [bn][bm + 8] (P^T, then dS^T for the second Scores tile):
//      store i16 (trunc S[i][j][r]) -> copy[key i*m + accRow(h, r)][query]
//    and the next product waits at one barrier for both copies.
//  - dV += P^T dO and dK += dS^T Q (keyMajorProduct): both operands from LDS
//    rows whose k (queries) are contiguous, Q^T and dO^T copied transposed
//    when the recipe loads its QueryRows tiles; wave w owns keys
//    keyRow0 = w * keyBlocksPerWave * m, a lane a column of d:
//      for s < bm/k: b[c] = Q^T[c*m + l%m][s*k + k0(h)..]
//                    a[i] = dS^T[keyRow0 + i*m + l%m][s*k + k0(h)..]
//                    acc[i][c] = instr.multiply(a[i], b[c], acc[i][c])
//  - dQ^T += K^T dS^T is the forward's O^T += V^T P^T (dS^T from the
//    accumulators), K^T [d][bn + 8] copied transposed beside K's rows.
//  - storeAdd: atomicrmw fadd (global, agent scope, no fine-grained memory,
//    denormals ignored) per element, so the backend selects
//    global_atomic_add_f32 rather than a compare-and-swap loop.
//  - bwd_dot_do_o and bwd_convert_dq load Query and Output tiles straight
//    into accumulator-shaped registers and use no LDS.
//
//===----------------------------------------------------------------------===//
#include "ir/Loops.h"
#include "ir/targets/AmdgpuMatrixTileOps.h"
#include "specs/pipelines/AmdgpuBackwardLayout.h"

using namespace fmhajit;
using namespace llvm;

namespace {
unsigned backwardLdsBytes(GpuTargetInfo &target) {
  const KernelSpec &spec = target.kernelSpec();
  return AmdgpuBackwardLayout(spec, *findArch(spec.target)).bytes();
}

class AmdgpuBackwardTileOps : public AmdgpuMatrixTileOps {
public:
  AmdgpuBackwardTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                        std::unique_ptr<AmdgpuMatrixInstr> instruction)
      : AmdgpuMatrixTileOps(b, target, std::move(instruction),
                            backwardLdsBytes(target)),
        bwd(spec, *findArch(spec.target)),
        gradients(spec.family == Family::BwdDqDkDv) {
    Value *wave = b.CreateLShr(target.threadId(b),
                               b.getInt32(Log2_32(target.waveSize())));
    keyRow0 = b.CreateMul(wave, b.getInt32(bwd.keyBlocksPerWave * m));
  }

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override;
  void fill(Tile &t, float value) override;
  void load(Tile &t, const GlobalRows &src, Value *valid,
            Value *scale) override;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override;
  void store(const Tile &t, const GlobalRows &dst, Value *valid) override;
  using AmdgpuMatrixTileOps::store;
  Tile transposed(const Tile &t) override;
  void zip(Tile &t, const Tile &other, ZipFn fn) override;
  void loadRows(RowVec &r, const GlobalRows &src, Value *valid,
                float fill) override;
  bool addsToMemory() const override { return true; }
  void storeAdd(const Tile &t, const GlobalRows &dst, Value *valid) override;

private:
  /// KeyGrad elements: (key block i, column block c, element r).
  unsigned gradCount(unsigned cols) const {
    return bwd.keyBlocksPerWave * (cols / m) * instr->accPerLane;
  }
  unsigned gradIndex(unsigned cols, unsigned i, unsigned c, unsigned r) const {
    return (i * (cols / m) + c) * instr->accPerLane + r;
  }
  /// The key of KeyGrad element (i, r), relative to the tile's first key.
  Value *gradKey(unsigned i, unsigned r) {
    return b.CreateAdd(keyRow0,
                       b.CreateAdd(b.getInt32(i * m), instr->accRow(b, h, r)));
  }
  void loadAccumulators(Tile &t, const GlobalRows &src, Value *valid);
  void keyMajorProduct(Tile &acc, const Tile &a, const Tile &bt);

  AmdgpuBackwardLayout bwd;
  bool gradients; ///< bwd_dq_dk_dv (else bwd_dot_do_o, bwd_convert_dq)
  Value *keyRow0;
  unsigned queryTiles = 0, queryRowTiles = 0, keyTiles = 0;
  Value *keysStorage = nullptr;  ///< K's rows
  Value *keysTStorage = nullptr; ///< K^T, filled with K's rows
  /// Scores storage -> its transposed copy (P^T, then dS^T).
  DenseMap<Value *, Value *> transposedCopies;
  /// A key-major product read LDS after the last LDS load's barrier.
  bool keyMajorRead = false;
};
} // namespace

// The recipe makes Q before dO, K^T before V^T and Q's rows before dO's
// (makeGradTiles); the layout places them in that order.
Tile AmdgpuBackwardTileOps::makeTile(TileRole role, unsigned rows,
                                     unsigned cols, const Twine &name) {
  auto registers = [&](unsigned count) {
    return Tile{role, rows, cols,
                entryAlloca(b, b.getFloatTy(), name, 4, count)};
  };
  switch (role) {
  case TileRole::Query:
    if (!gradients) // bwd_dot_do_o's dO and O: accumulator-shaped
      return registers(accCount(cols));
    assert(queryTiles < 2 && "Q and dO");
    if (!layout.queryInShared)
      return AmdgpuMatrixTileOps::makeTile(role, rows, cols, name);
    return {role, rows, cols, shared(queryTiles++ ? bwd.dO : bwd.query)};
  case TileRole::QueryRows:
    assert(queryRowTiles < 2 && "Q^T and dO^T");
    return {role, rows, cols, shared(queryRowTiles++ ? bwd.dOT : bwd.queryT)};
  case TileRole::KeyT: {
    assert(keyTiles < 2 && "K^T and V^T");
    Tile t{role, rows, cols, shared(keyTiles++ ? bwd.values : bwd.keys)};
    if (keyTiles == 1) {
      keysStorage = t.storage;
      keysTStorage = shared(bwd.keysT);
    }
    return t;
  }
  case TileRole::KeyGrad:
    return registers(gradCount(cols));
  default:
    return AmdgpuMatrixTileOps::makeTile(role, rows, cols, name);
  }
}

void AmdgpuBackwardTileOps::fill(Tile &t, float value) {
  if (t.role != TileRole::KeyGrad)
    return AmdgpuMatrixTileOps::fill(t, value);
  for (unsigned e = 0; e < gradCount(t.cols); ++e)
    b.CreateStore(f32(value), slot(t.storage, e));
}

// K's load also copies K^T, which dQ's product reads as the forward's
// O^T product reads V^T.
void AmdgpuBackwardTileOps::load(Tile &t, const GlobalRows &src, Value *valid,
                                 Value *scale) {
  bool registerTile =
      t.role == TileRole::Output || (t.role == TileRole::Query && !gradients);
  if (registerTile) {
    assert(!scale && "register tiles load unscaled");
    return loadAccumulators(t, src, valid);
  }
  if (t.role == TileRole::Query) {
    keyMajorRead &= !layout.queryInShared;
    return AmdgpuMatrixTileOps::load(t, src, valid, scale);
  }
  beginSharedLoad();
  keyMajorRead = false;
  if (t.role == TileRole::QueryRows) {
    copyTransposed(t.storage, t.rows, t.cols, src, valid);
  } else {
    assert(t.role == TileRole::KeyT && "K or V rows");
    copyRows(t.storage, t.cols, t.rows, src, valid);
    if (t.storage == keysStorage)
      copyTransposed(keysTStorage, t.cols, t.rows, src, valid);
  }
  endSharedLoad();
}

// The lane's query row, the accumulator's columns, zeros past valid rows
// and past the tile's columns.
void AmdgpuBackwardTileOps::loadAccumulators(Tile &t, const GlobalRows &src,
                                             Value *valid) {
  Type *srcElem = elementType(b.getContext(), src.dtype);
  for (unsigned j = 0; j < nTiles; ++j) {
    Value *row = queryRow(j);
    Value *inside = b.CreateICmpSLT(row, valid);
    Value *rowPtr = src.rowPointerOrFirst(b, row, inside);
    forEachAcc(t.cols, [&](unsigned i, unsigned jj, unsigned r) {
      if (jj != j)
        return;
      Value *c = accColumn(i, r);
      Value *keep = inside;
      if ((i + 1) * m > t.cols) { // clamped columns past the tile
        Value *within = b.CreateICmpULT(c, b.getInt32(t.cols));
        keep = b.CreateAnd(keep, within);
        c = b.CreateSelect(within, c, b.getInt32(0));
      }
      Value *x = b.CreateLoad(
          srcElem, b.CreateInBoundsGEP(srcElem, rowPtr,
                                       b.CreateZExt(c, b.getInt64Ty())));
      if (!srcElem->isFloatTy())
        x = b.CreateFPExt(x, b.getFloatTy());
      b.CreateStore(b.CreateSelect(keep, x, f32(0)),
                    slot(t.storage, accIndex(i, j, r)));
    });
  }
}

void AmdgpuBackwardTileOps::mma(Tile &acc, const Tile &a, const Tile &bt) {
  if (acc.role != TileRole::KeyGrad)
    return AmdgpuMatrixTileOps::mma(acc, a, bt);
  assert(a.role == TileRole::ScoresT && bt.role == TileRole::QueryRows &&
         "dV += P^T dO, dK += dS^T Q");
  if (copiesPending) {
    target.barrier(b);
    copiesPending = false;
  }
  keyMajorProduct(acc, a, bt);
  keyMajorRead = true;
}

void AmdgpuBackwardTileOps::keyMajorProduct(Tile &acc, const Tile &a,
                                            const Tile &bt) {
  unsigned steps = a.cols / instr->k, colBlocks = acc.cols / m;
  unsigned keyBlocks = bwd.keyBlocksPerWave;
  auto *accType = FixedVectorType::get(b.getFloatTy(), instr->accPerLane);
  SmallVector<Value *, 32> sums(keyBlocks * colBlocks,
                                PoisonValue::get(accType));
  for (unsigned e = 0; e < gradCount(acc.cols); ++e) {
    unsigned r = e % instr->accPerLane, block = e / instr->accPerLane;
    Value *x = b.CreateLoad(b.getFloatTy(), slot(acc.storage, e));
    sums[block] = b.CreateInsertElement(sums[block], x, uint64_t(r));
  }
  unsigned aPitch = pitchOf(a.storage), bPitch = pitchOf(bt.storage);
  // One B operand live at a time: gfx11's hold all 16 k (8 VGPRs), and
  // d / 16 of them at once spilled on gfx1100.
  for (unsigned s = 0; s < steps; ++s) {
    SmallVector<Value *, 4> aOps;
    for (unsigned i = 0; i < keyBlocks; ++i)
      aOps.push_back(sharedOperand(
          a.storage, aPitch,
          b.CreateAdd(keyRow0, b.CreateAdd(b.getInt32(i * m), col)), s));
    for (unsigned c = 0; c < colBlocks; ++c) {
      Value *bOp = sharedOperand(bt.storage, bPitch,
                                 b.CreateAdd(b.getInt32(c * m), col), s);
      for (unsigned i = 0; i < keyBlocks; ++i)
        sums[i * colBlocks + c] =
            instr->multiply(b, aOps[i], bOp, sums[i * colBlocks + c]);
    }
  }
  for (unsigned e = 0; e < gradCount(acc.cols); ++e)
    b.CreateStore(b.CreateExtractElement(sums[e / instr->accPerLane],
                                         uint64_t(e % instr->accPerLane)),
                  slot(acc.storage, e));
}

// dK and dV: the wave's keys, a lane per column.
void AmdgpuBackwardTileOps::store(const Tile &t, const GlobalRows &dst,
                                  Value *valid) {
  if (t.role != TileRole::KeyGrad)
    return AmdgpuMatrixTileOps::store(t, dst, valid);
  Type *outElem = elementType(b.getContext(), dst.dtype);
  unsigned colBlocks = t.cols / m;
  for (unsigned i = 0; i < bwd.keyBlocksPerWave; ++i)
    for (unsigned r = 0; r < instr->accPerLane; ++r) {
      Value *key = gradKey(i, r);
      emitIf(b, b.CreateICmpSLT(key, valid), "store.key", [&] {
        Value *rowPtr = dst.rowPointer(b, b.CreateZExt(key, b.getInt64Ty()));
        for (unsigned c = 0; c < colBlocks; ++c) {
          Value *x = b.CreateLoad(b.getFloatTy(),
                                  slot(t.storage, gradIndex(t.cols, i, c, r)));
          if (!outElem->isFloatTy())
            x = b.CreateFPTrunc(x, outElem);
          Value *column = b.CreateAdd(b.getInt32(c * m), col);
          b.CreateStore(
              x, b.CreateInBoundsGEP(outElem, rowPtr,
                                     b.CreateZExt(column, b.getInt64Ty())));
        }
      });
    }
}

Tile AmdgpuBackwardTileOps::transposed(const Tile &t) {
  if (t.role == TileRole::KeyT) // K^T's copy beside K's rows
    return {TileRole::Keys, t.cols, t.rows, keysTStorage};
  assert(t.role == TileRole::Scores && "transposed() of S^T or K^T");
  Value *&copy = transposedCopies[t.storage];
  if (!copy) {
    assert(transposedCopies.size() <= 2 && "P and dS");
    copy = shared(transposedCopies.size() == 1 ? bwd.probsT : bwd.gradsT);
  }
  if (keyMajorRead) { // a wave may still read the last step's copy
    target.barrier(b);
    keyMajorRead = false;
  }
  unsigned pitch = pitchOf(copy);
  forEachAcc(t.cols, [&](unsigned i, unsigned j, unsigned r) {
    Value *x = b.CreateLoad(b.getFloatTy(), slot(t.storage, accIndex(i, j, r)));
    Value *index = b.CreateAdd(b.CreateMul(accColumn(i, r), b.getInt32(pitch)),
                               queryRow(j));
    b.CreateStore(toBits(x), b.CreateInBoundsGEP(b.getInt16Ty(), copy, index));
  });
  copiesPending = true; // every wave reads every other's queries
  return {TileRole::ScoresT, t.cols, t.rows, copy};
}

void AmdgpuBackwardTileOps::zip(Tile &t, const Tile &other, ZipFn fn) {
  assert(t.rows == other.rows && t.cols == other.cols && "zip same shapes");
  for (unsigned e = 0; e < accCount(t.cols); ++e) {
    Value *p = slot(t.storage, e);
    Value *x = b.CreateLoad(b.getFloatTy(), p);
    Value *y = b.CreateLoad(b.getFloatTy(), slot(other.storage, e));
    b.CreateStore(fn(b, x, y), p);
  }
}

// One float per query tile, the lane's query (both lane groups).
void AmdgpuBackwardTileOps::loadRows(RowVec &r, const GlobalRows &src,
                                     Value *valid, float fill) {
  for (unsigned j = 0; j < nTiles; ++j) {
    Value *row = queryRow(j);
    Value *inside = b.CreateICmpSLT(row, valid);
    Value *x =
        b.CreateLoad(b.getFloatTy(), src.rowPointerOrFirst(b, row, inside));
    b.CreateStore(b.CreateSelect(inside, x, f32(fill)), slot(r.storage, j));
  }
}

// dQ^T's accumulators: the lane's query row, columns accColumn(i, r).
void AmdgpuBackwardTileOps::storeAdd(const Tile &t, const GlobalRows &dst,
                                     Value *valid) {
  assert(dst.dtype == DType::F32 && "atomic adds into fp32");
  LLVMContext &ctx = b.getContext();
  SyncScope::ID agent = ctx.getOrInsertSyncScopeID("agent");
  MDNode *empty = MDNode::get(ctx, {});
  Type *globalPtr = PointerType::get(ctx, 1);
  for (unsigned j = 0; j < nTiles; ++j) {
    Value *row = queryRow(j);
    emitIf(b, b.CreateICmpSLT(row, valid), "add", [&] {
      Value *rowPtr = b.CreateAddrSpaceCast(
          dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty())), globalPtr);
      // accRow(h, r) = accRow(h, 0) + accRow(0, r) for every instruction:
      // one lane address a row, the rest immediate offsets. Complete
      // addresses per element were loop-invariant in part, hoisted out of
      // the query loop, and spilled on gfx1100.
      Value *lanePtr = b.CreateInBoundsGEP(
          b.getFloatTy(), rowPtr,
          b.CreateZExt(instr->accRow(b, h, 0), b.getInt64Ty()));
      forEachAcc(t.cols, [&](unsigned i, unsigned jj, unsigned r) {
        if (jj != j)
          return;
        Value *x =
            b.CreateLoad(b.getFloatTy(), slot(t.storage, accIndex(i, j, r)));
        auto *offset = cast<ConstantInt>(instr->accRow(b, b.getInt32(0), r));
        Value *at = b.CreateConstInBoundsGEP1_32(
            b.getFloatTy(), lanePtr, i * m + unsigned(offset->getZExtValue()));
        AtomicRMWInst *add =
            b.CreateAtomicRMW(AtomicRMWInst::FAdd, at, x, Align(4),
                              AtomicOrdering::Monotonic, agent);
        add->setMetadata("amdgpu.no.fine.grained.memory", empty);
        add->setMetadata("amdgpu.ignore.denormal.mode", empty);
      });
    });
  }
}

std::unique_ptr<TileOps>
fmhajit::createAmdgpuBackwardTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                                     std::unique_ptr<AmdgpuMatrixInstr> instr) {
  return std::make_unique<AmdgpuBackwardTileOps>(b, target, std::move(instr));
}
