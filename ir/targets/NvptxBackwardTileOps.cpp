//===- NvptxBackwardTileOps.cpp - The backward on mma.sync m16n8k16 -------===//
//
// The words of the backward recipe (ir/BackwardKernel.cpp) on pipeline=mma,
// with FlashAttention-2's data flow (specs/pipelines/BackwardMmaLayout.h):
//  - S = Q K^T and dP = dO V^T are the forward's product: each warp owns
//    16-row m-tiles of queries, and S, P, dP and dS stay fp32 registers.
//  - transposed(S) writes the tile as 16-bit pairs into its shared buffer
//    [bm][bn] (P, or dS for the second Scores tile transposed) and waits at
//    a barrier; the key-major products then read it with ldmatrix.trans:
//      dV += P^T dO, dK += dS^T Q   A: ldmatrix.x4.trans of the buffer at
//                                   (query k, key m), the warp's key rows
//                                   B: ldmatrix.x4.trans of dO / Q rows
//    dK and dV (KeyGrad) are accumulators laid out as O is, their rows keys:
//    the warp owning query m-tile i owns key m-tile i too (bm = bn).
//  - dQ += dS K reads dS from registers, as the forward's O += P V reads P,
//    with K's shared rows (transposed(K^T)) as B.
//  - storeAdd adds fp32 accumulators into global memory with
//    red.global.add.f32, one per element, no result awaited.
//  - Q and dO in shared memory already are the rows the key-major products
//    read (rowsView): the softmax scale is set aside until S is formed.
//  - bwd_dot_do_o and bwd_convert_dq load Output tiles straight into
//    registers (the lane's element pairs), since they multiply nothing.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxMmaTileOps.h"
#include "specs/ArchTable.h"
#include "specs/pipelines/BackwardMmaLayout.h"
#include "llvm/IR/InlineAsm.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class NvptxBackwardTileOps : public NvptxMmaTileOps {
public:
  NvptxBackwardTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                       const ArchInfo &arch)
      : NvptxMmaTileOps(b, target, MmaLayout(target.kernelSpec(), arch)),
        layout(target.kernelSpec()) {}

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override;
  void fill(Tile &tile, float value) override {
    Tile regs = asOutput(tile);
    NvptxMmaTileOps::fill(regs, value);
  }
  void load(Tile &tile, const GlobalRows &src, Value *valid,
            Value *scale) override;
  void store(const Tile &tile, const GlobalRows &dst, Value *valid) override {
    NvptxMmaTileOps::store(asOutput(tile), dst, valid);
  }
  using NvptxMmaTileOps::store;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override;
  Tile transposed(const Tile &t) override;
  void zip(Tile &t, const Tile &other, ZipFn fn) override;
  void loadRows(RowVec &r, const GlobalRows &src, Value *valid,
                float fill) override;
  std::optional<Tile> rowsView(const Tile &query) override {
    return Tile{TileRole::QueryRows, query.rows, query.cols, query.storage};
  }
  bool addsToMemory() const override { return true; }
  void storeAdd(const Tile &t, const GlobalRows &dst, Value *valid) override;

protected:
  unsigned pitchOf(const Tile &tile) const override {
    assert(pitches.count(tile.storage) && "not a shared tile");
    return pitches.lookup(tile.storage);
  }
  SmallVector<Value *, 4> probabilityFragments(const Tile &s, unsigned i,
                                               unsigned kk) override;

private:
  /// KeyGrad tiles are accumulators laid out as Output tiles.
  static Tile asOutput(const Tile &t) {
    Tile out = t;
    if (t.role == TileRole::KeyGrad)
      out.role = TileRole::Output;
    return out;
  }
  /// A tile of \p role in registers, laid out as an Output tile.
  Tile registerTile(TileRole role, unsigned rows, unsigned cols,
                    const Twine &name) {
    Tile t = NvptxMmaTileOps::makeTile(TileRole::Output, rows, cols, name);
    t.role = role;
    return t;
  }
  Tile sharedTileAt(TileRole role, unsigned rows, unsigned cols,
                    const SharedTile &place);
  /// The 16-bit copy of Scores tile \p t in its shared buffer.
  Value *writeTransposed(const Tile &t);
  /// red.global.add.f32 of \p value at \p address (a generic pointer).
  void addToGlobal(Value *address, Value *value);

  BackwardMmaLayout layout;
  /// Shared tiles' storage -> their pitch in elements.
  DenseMap<Value *, unsigned> pitches;
  /// Scores storage -> its transposed copy (P, then dS).
  DenseMap<Value *, Value *> transposedCopies;
  unsigned queryTiles = 0, keyTiles = 0;
  /// While a key-major product runs: this lane's ldmatrix address in its
  /// A tile (see mma).
  Value *scoresTBase = nullptr;
};
} // namespace

Tile NvptxBackwardTileOps::sharedTileAt(TileRole role, unsigned rows,
                                        unsigned cols,
                                        const SharedTile &place) {
  Value *storage =
      b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, place.offset);
  pitches[storage] = place.pitch;
  return {role, rows, cols, storage};
}

// The recipe makes Q before dO and K^T before V^T (makeGradTiles); the
// layout places them in that order.
Tile NvptxBackwardTileOps::makeTile(TileRole role, unsigned rows, unsigned cols,
                                    const Twine &name) {
  switch (role) {
  case TileRole::Query:
    if (spec.family != Family::BwdDqDkDv) // bwd_dot_do_o's dO and O
      return registerTile(role, rows, cols, name);
    assert(queryTiles < 2 && "Q and dO");
    return sharedTileAt(role, rows, cols,
                        queryTiles++ ? layout.dO : layout.query);
  case TileRole::KeyT:
    assert(keyTiles < 2 && "K^T and V^T");
    return sharedTileAt(role, rows, cols,
                        keyTiles++ ? layout.values : layout.keys);
  case TileRole::KeyGrad:
    return registerTile(role, rows, cols, name);
  case TileRole::Scores:
  case TileRole::Output:
    return NvptxMmaTileOps::makeTile(role, rows, cols, name);
  default:
    llvm_unreachable("QueryRows, Keys and ScoresT are views on the GPU");
  }
}

// Register tiles (bwd_dot_do_o's, bwd_convert_dq's) load the lane's own
// element pairs; shared tiles go through the forward's cp.async copies.
void NvptxBackwardTileOps::load(Tile &tile, const GlobalRows &src, Value *valid,
                                Value *scale) {
  if (pitches.count(tile.storage))
    return NvptxMmaTileOps::load(tile, src, valid, scale);
  Type *srcElem = elementType(b.getContext(), src.dtype);
  auto *pairType = FixedVectorType::get(srcElem, 2);
  Align align(2 * srcElem->getPrimitiveSizeInBits() / 8);
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *row = rowOf(i, 2 * half);
      Value *inside = b.CreateICmpSLT(row, valid);
      // Row 0 is valid in every item: a row past the end reads it, unused.
      Value *safeRow = b.CreateSelect(inside, row, b.getInt32(0));
      Value *rowPtr = src.rowPointer(b, b.CreateZExt(safeRow, b.getInt64Ty()));
      for (unsigned j = 0; j < tile.cols / 8; ++j) {
        Value *at = b.CreateInBoundsGEP(
            srcElem, rowPtr, b.CreateZExt(colOf(j, 0), b.getInt64Ty()));
        Value *pair = b.CreateAlignedLoad(pairType, at, align);
        if (!srcElem->isFloatTy())
          pair = b.CreateFPExt(pair, FixedVectorType::get(b.getFloatTy(), 2));
        for (unsigned e = 0; e < 2; ++e) {
          Value *x = b.CreateExtractElement(pair, uint64_t(e));
          if (scale)
            x = b.CreateFMul(x, scale);
          b.CreateStore(b.CreateSelect(inside, x, f32(0)),
                        slot(tile.storage, accIndex(tile, i, j, 2 * half + e)));
        }
      }
    }
}

void NvptxBackwardTileOps::zip(Tile &t, const Tile &other, ZipFn fn) {
  assert(t.rows == other.rows && t.cols == other.cols && "zip same shapes");
  for (unsigned e = 0; e < accCount(t); ++e) {
    Value *p = slot(t.storage, e);
    Value *x = b.CreateLoad(b.getFloatTy(), p);
    Value *y = b.CreateLoad(b.getFloatTy(), slot(other.storage, e));
    b.CreateStore(fn(b, x, y), p);
  }
}

// Each lane holds rows g and g+8 of its m-tiles (rowOf), as the accumulators.
void NvptxBackwardTileOps::loadRows(RowVec &r, const GlobalRows &src,
                                    Value *valid, float fill) {
  for (unsigned s = 0; s < mTiles * 2; ++s) {
    Value *row = rowOf(s / 2, 2 * (s % 2));
    Value *inside = b.CreateICmpSLT(row, valid);
    Value *safeRow = b.CreateSelect(inside, row, b.getInt32(0));
    Value *x =
        b.CreateLoad(b.getFloatTy(),
                     src.rowPointer(b, b.CreateZExt(safeRow, b.getInt64Ty())));
    b.CreateStore(b.CreateSelect(inside, x, f32(fill)), slot(r.storage, s));
  }
}

Value *NvptxBackwardTileOps::writeTransposed(const Tile &t) {
  Value *&copy = transposedCopies[t.storage];
  if (!copy) {
    assert(transposedCopies.size() <= 2 && "P and dS");
    copy =
        sharedTileAt(TileRole::ScoresT, t.cols, t.rows,
                     transposedCopies.size() == 1 ? layout.probs : layout.grads)
            .storage;
  }
  Tile shared{TileRole::ScoresT, t.cols, t.rows, copy};
  barrierIfRead(shared); // a warp may still read the last step's copy
  unsigned pitch = pitches.lookup(copy);
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *rowStart = b.CreateMul(rowOf(i, 2 * half), b.getInt32(pitch));
      for (unsigned j = 0; j < t.cols / 8; ++j) {
        Value *lo = b.CreateLoad(b.getFloatTy(),
                                 slot(t.storage, accIndex(t, i, j, 2 * half)));
        Value *hi = b.CreateLoad(
            b.getFloatTy(), slot(t.storage, accIndex(t, i, j, 2 * half + 1)));
        Value *at = b.CreateInBoundsGEP(b.getInt16Ty(), copy,
                                        b.CreateAdd(rowStart, colOf(j, 0)));
        b.CreateAlignedStore(packPair(lo, hi), at, Align(4));
      }
    }
  barrier(); // every warp reads every other's rows
  return copy;
}

Tile NvptxBackwardTileOps::transposed(const Tile &t) {
  if (t.role == TileRole::KeyT) // K's rows in shared memory are K^T's columns
    return {TileRole::Keys, t.cols, t.rows, t.storage};
  assert(t.role == TileRole::Scores && "transposed() of S^T or K^T");
  return {TileRole::ScoresT, t.cols, t.rows, writeTransposed(t)};
}

// dV += P^T dO and dK += dS^T Q: the forward's O += P V with the A
// fragments read from the transposed copy. Matrix r of ldmatrix.x4.trans
// covers queries (k) 8 * (r >> 1) and keys (m) 8 * (r & 1) of the 16 x 16
// fragment, so lane l names query (l & 7) + 8 * (l >> 4) and key
// 8 * ((l >> 3) & 1) past the warp's first key row.
void NvptxBackwardTileOps::mma(Tile &acc, const Tile &a, const Tile &bt) {
  if (acc.role != TileRole::KeyGrad)
    return NvptxMmaTileOps::mma(acc, a, bt);
  assert(a.role == TileRole::ScoresT && "dK and dV read P^T or dS^T");
  markRead(a);
  Value *query = b.CreateAdd(
      b.CreateAnd(lane, b.getInt32(7)),
      b.CreateShl(b.CreateLShr(lane, b.getInt32(4)), b.getInt32(3)));
  Value *key = b.CreateAdd(
      warpRow0,
      b.CreateShl(b.CreateAnd(b.CreateLShr(lane, b.getInt32(3)), b.getInt32(1)),
                  b.getInt32(3)));
  scoresTBase = fragmentBase(a, query, key);
  Tile regs = asOutput(acc);
  NvptxMmaTileOps::mma(regs, a, bt);
  scoresTBase = nullptr;
}

SmallVector<Value *, 4>
NvptxBackwardTileOps::probabilityFragments(const Tile &s, unsigned i,
                                           unsigned kk) {
  if (s.role != TileRole::ScoresT)
    return NvptxMmaTileOps::probabilityFragments(s, i, kk);
  assert(scoresTBase && "read inside a key-major product");
  Value *out[4];
  ldmatrix(fragmentAt(s, scoresTBase, kk * 16, i * 16), /*transposed=*/true,
           out);
  return {out[0], out[1], out[2], out[3]};
}

void NvptxBackwardTileOps::addToGlobal(Value *address, Value *value) {
  Type *globalPtr = PointerType::get(b.getContext(), 1);
  auto *red = InlineAsm::get(
      FunctionType::get(b.getVoidTy(), {globalPtr, b.getFloatTy()}, false),
      "red.global.add.f32 [$0], $1;", "l,f,~{memory}",
      /*hasSideEffects=*/true);
  b.CreateCall(red, {b.CreateAddrSpaceCast(address, globalPtr), value});
}

void NvptxBackwardTileOps::storeAdd(const Tile &t, const GlobalRows &dst,
                                    Value *valid) {
  assert(dst.dtype == DType::F32 && "atomic adds into fp32");
  for (unsigned i = 0; i < mTiles; ++i)
    for (unsigned half = 0; half < 2; ++half) {
      Value *row = rowOf(i, 2 * half);
      emitIf(b, b.CreateICmpSLT(row, valid), "add", [&] {
        Value *rowPtr = dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty()));
        for (unsigned j = 0; j < t.cols / 8; ++j)
          for (unsigned e = 0; e < 2; ++e) {
            Value *at =
                b.CreateInBoundsGEP(b.getFloatTy(), rowPtr,
                                    b.CreateZExt(colOf(j, e), b.getInt64Ty()));
            addToGlobal(
                at,
                b.CreateLoad(b.getFloatTy(),
                             slot(t.storage, accIndex(t, i, j, 2 * half + e))));
          }
      });
    }
}

std::unique_ptr<TileOps>
fmhajit::createNvptxBackwardTileOps(IRBuilderBase &b, GpuTargetInfo &target) {
  return std::make_unique<NvptxBackwardTileOps>(
      b, target, *findArch(target.kernelSpec().target));
}
