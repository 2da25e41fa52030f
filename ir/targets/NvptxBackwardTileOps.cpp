//===- NvptxBackwardTileOps.cpp - The backward on mma.sync m16n8k16 -------===//
//
// The words of the backward recipe (ir/BackwardKernel.cpp) on pipeline=mma,
// with FlashAttention-2's data flow (specs/pipelines/BackwardMmaLayout.h):
//  - S = Q K^T and dP = dO V^T are the forward's product: each warp owns
//    16-row m-tiles of queries, and S, P, dP and dS stay fp32 registers.
//  - transposed(S) writes the tile as 16-bit pairs into its shared buffer
//    [bm][bn] (P, or dS for the second Scores tile transposed); the first
//    product that reads a copy waits at one barrier for every copy written
//    before it (the recipe writes P and dS, then reads them), and the
//    key-major products read it with ldmatrix.trans:
//      dV += P^T dO, dK += dS^T Q   A: ldmatrix.x4.trans of the buffer at
//                                   (query k, key m), the warp's key rows
//                                   B: ldmatrix.x4.trans of dO / Q rows
//    dK and dV (KeyGrad) are accumulators laid out as O is, their rows keys:
//    warp w owns key m-tiles from keyRow0 = 16 * tilesPerWarp * w.
//  - dQ += dS K reads dS from registers, as the forward's O += P V reads P,
//    with K's shared rows (transposed(K^T)) as B. Where warps split the keys
//    (bm < bn, BackwardMmaLayout's key groups), a warp's S holds only its
//    keys, so it reads dS of all the keys from the shared copy instead
//    (ldmatrix), and owns dQ's columns of its key group.
//  - storeAdd adds fp32 accumulators into global memory without awaiting a
//    result: red.global.add.v2.f32 of the lane's column pair on sm_90 with
//    PTX 8.1 (half the instructions and L2 operations), else
//    red.global.add.f32 per element.
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

using namespace fmhajit;
using namespace llvm;

namespace {
/// The NN of sm_NN (90 for sm_90a).
unsigned smVersion(const ArchInfo &arch) {
  unsigned version = 0;
  StringRef(arch.cpu).drop_front(3).consumeInteger(10, version);
  return version;
}

class NvptxBackwardTileOps : public NvptxMmaTileOps {
public:
  NvptxBackwardTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                       const ArchInfo &arch);

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override;
  void fill(Tile &tile, float value) override {
    loadsOpen = false;
    Tile regs = asOutput(tile);
    NvptxMmaTileOps::fill(regs, value);
  }
  void load(Tile &tile, const GlobalRows &src, Value *valid,
            Value *scale) override;
  void store(const Tile &tile, const GlobalRows &dst, Value *valid) override;
  using NvptxMmaTileOps::store;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override;
  Tile transposed(const Tile &t) override;
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
  /// \p tile's storage moved by \p rows rows and \p cols columns (null:
  /// none), with the same pitch.
  Tile shiftedShared(const Tile &tile, Value *rows, Value *cols);
  /// The 16-bit copy of Scores tile \p t in its shared buffer, visible to
  /// the block after publishCopies().
  Value *writeTransposed(const Tile &t);
  /// A barrier if a copy was written since the last one.
  void publishCopies();
  /// dQ += dS K where the warps split the keys: dS of all the keys from its
  /// shared copy, K's rows at the warp's dQ columns.
  void dqFromSharedScores(Tile &acc, const Tile &dS, const Tile &keys);
  /// Runs \p body with rowOf and colOf counting from (\p row0, \p col0;
  /// null: column 0).
  template <typename Fn> void withOrigin(Value *row0, Value *col0, Fn body) {
    Value *row = warpRow0, *col = warpCol0;
    warpRow0 = row0, warpCol0 = col0;
    body();
    warpRow0 = row, warpCol0 = col;
  }

  BackwardMmaLayout layout;
  /// The warp's first key row (dK, dV), first query row (S, dP, dQ: rowOf's
  /// default) and, where key groups split a row group's work, first key of
  /// S (colOf's default) and first column of dQ; null for 0.
  Value *keyRow0, *queryRow0, *scoreCol0 = nullptr, *gradCol0 = nullptr;
  /// Whether storeAdd adds column pairs (red.global.add.v2.f32).
  bool pairAdds;
  /// Shared tiles' storage -> their pitch in elements.
  DenseMap<Value *, unsigned> pitches;
  /// Scores storage -> its transposed copy (P, then dS).
  DenseMap<Value *, Value *> transposedCopies;
  /// Scores tiles whose shared copy holds their values: written since the
  /// last product into the tile.
  SmallPtrSet<Value *, 2> copiesCurrent;
  /// Whether a copy was written after the last barrier.
  bool copiesUnpublished = false;
  /// Whether the last words were shared loads (see load).
  bool loadsOpen = false;
  unsigned queryTiles = 0, keyTiles = 0;
  /// While a product reads P^T or dS^T (or dS, split keys) from shared
  /// memory: this lane's ldmatrix address in that tile (see mma).
  Value *scoresBase = nullptr;
};
} // namespace

// The base class counts m-tiles of bm / warps rows; here m-tiles of keys
// set the count (BackwardMmaLayout), and warps that share query rows split
// the keys.
NvptxBackwardTileOps::NvptxBackwardTileOps(IRBuilderBase &b,
                                           GpuTargetInfo &target,
                                           const ArchInfo &arch)
    : NvptxMmaTileOps(b, target, MmaLayout(target.kernelSpec(), arch)),
      layout(target.kernelSpec()),
      pairAdds(smVersion(arch) >= 90 && target.options.ptxVersion >= 81) {
  mTiles = layout.tilesPerWarp;
  Value *warp = b.CreateLShr(target.threadId(b), b.getInt32(5));
  keyRow0 = b.CreateMul(warp, b.getInt32(16 * mTiles), "key.row0");
  queryRow0 = keyRow0;
  if (layout.keyGroups > 1) {
    queryRow0 = b.CreateMul(b.CreateURem(warp, b.getInt32(layout.rowGroups)),
                            b.getInt32(16 * mTiles), "query.row0");
  }
  // bwd_dot_do_o and bwd_convert_dq multiply nothing: with key groups, the
  // warps of a row group repeat its rows.
  if (layout.keyGroups > 1 && spec.family == Family::BwdDqDkDv) {
    Value *group = b.CreateUDiv(warp, b.getInt32(layout.rowGroups));
    scoreCol0 = b.CreateMul(group, b.getInt32(spec.bn / layout.keyGroups));
    gradCol0 = b.CreateMul(group, b.getInt32(spec.d / layout.keyGroups));
  }
  warpRow0 = queryRow0;
  warpCol0 = scoreCol0;
}

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
  case TileRole::Output: {
    // A warp holds its key group's share of S's keys and dQ's columns; an
    // unused tile (dtanh without a soft-cap) may be narrower than 8.
    if (scoreCol0)
      cols = std::max(cols / layout.keyGroups, 8u);
    return NvptxMmaTileOps::makeTile(role, rows, cols, name);
  }
  default:
    llvm_unreachable("QueryRows, Keys and ScoresT are views on the GPU");
  }
}

// dK and dV rows are the warp's keys; dQ's columns those of its key group.
void NvptxBackwardTileOps::store(const Tile &tile, const GlobalRows &dst,
                                 Value *valid) {
  bool keys = tile.role == TileRole::KeyGrad;
  withOrigin(keys ? keyRow0 : queryRow0, keys ? nullptr : gradCol0,
             [&] { NvptxMmaTileOps::store(asOutput(tile), dst, valid); });
}

// Register tiles (bwd_dot_do_o's, bwd_convert_dq's) load the lane's own
// element pairs; shared tiles go through the forward's cp.async copies.
// Each group of shared loads (loads with no product or fill between them)
// starts at a barrier: the recipe reloads Q and dO at the top of a key
// item's loop and K and V at the top of a query item's, and the step before
// read them in products after its last barrier, which the base class's
// tracking (in emission order) does not see across the loop's back edge.
void NvptxBackwardTileOps::load(Tile &tile, const GlobalRows &src, Value *valid,
                                Value *scale) {
  if (pitches.count(tile.storage)) {
    if (!loadsOpen)
      barrier();
    loadsOpen = true;
    return NvptxMmaTileOps::load(tile, src, valid, scale);
  }
  loadAccumulator(tile, src, valid, scale);
}

Tile NvptxBackwardTileOps::shiftedShared(const Tile &tile, Value *rows,
                                         Value *cols) {
  unsigned pitch = pitchOf(tile);
  Value *index = rows ? b.CreateMul(rows, b.getInt32(pitch)) : b.getInt32(0);
  if (cols)
    index = b.CreateAdd(index, cols);
  Tile shifted = tile;
  shifted.storage = b.CreateInBoundsGEP(b.getInt16Ty(), tile.storage, index);
  pitches[shifted.storage] = pitch;
  return shifted;
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
  copiesUnpublished = true; // every warp reads every other's rows
  copiesCurrent.insert(t.storage);
  return copy;
}

void NvptxBackwardTileOps::publishCopies() {
  if (copiesUnpublished)
    barrier();
  copiesUnpublished = false;
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
// S = Q K^T and dP = dO V^T: with key groups, the forward's product on the
// K (V) rows of the warp's keys.
void NvptxBackwardTileOps::mma(Tile &acc, const Tile &a, const Tile &bt) {
  loadsOpen = false;
  if (acc.role == TileRole::Scores) {
    copiesCurrent.erase(acc.storage);
    if (!scoreCol0)
      return NvptxMmaTileOps::mma(acc, a, bt);
    waitFor(a); // Q (dO) first: waiting for it waits for the older K (V)
    waitFor(bt);
    markRead(bt);
    return NvptxMmaTileOps::mma(acc, a, shiftedShared(bt, scoreCol0, nullptr));
  }
  if (acc.role == TileRole::Output && a.role == TileRole::Scores && gradCol0)
    return dqFromSharedScores(acc, a, bt);
  if (acc.role != TileRole::KeyGrad)
    return NvptxMmaTileOps::mma(acc, a, bt);
  assert(a.role == TileRole::ScoresT && "dK and dV read P^T or dS^T");
  publishCopies();
  markRead(a);
  Value *query = b.CreateAdd(
      b.CreateAnd(lane, b.getInt32(7)),
      b.CreateShl(b.CreateLShr(lane, b.getInt32(4)), b.getInt32(3)));
  Value *key = b.CreateAdd(
      keyRow0,
      b.CreateShl(b.CreateAnd(b.CreateLShr(lane, b.getInt32(3)), b.getInt32(1)),
                  b.getInt32(3)));
  scoresBase = fragmentBase(a, query, key);
  Tile regs = asOutput(acc);
  NvptxMmaTileOps::mma(regs, a, bt);
  scoresBase = nullptr;
}

// A fragments of dS (m-tile i of the warp's query rows, keys 16 kk..) by
// ldmatrix.x4 of the [bm][bn] copy, as Q's (queryFragments): lane l names
// query row l & 15 and key 8 * (l >> 4). Query items (deterministic=1) have
// not written the copy yet.
void NvptxBackwardTileOps::dqFromSharedScores(Tile &acc, const Tile &dS,
                                              const Tile &keys) {
  assert(keys.role == TileRole::Keys && "dQ += dS K");
  if (!copiesCurrent.count(dS.storage))
    writeTransposed(dS);
  publishCopies();
  Tile shared{TileRole::Scores, dS.rows, spec.bn,
              transposedCopies.lookup(dS.storage)};
  markRead(shared);
  waitFor(keys);
  markRead(keys);
  scoresBase = fragmentBase(
      shared, b.CreateAdd(queryRow0, b.CreateAnd(lane, b.getInt32(15))),
      b.CreateShl(b.CreateLShr(lane, b.getInt32(4)), b.getInt32(3)));
  NvptxMmaTileOps::mma(acc, shared, shiftedShared(keys, nullptr, gradCol0));
  scoresBase = nullptr;
}

SmallVector<Value *, 4>
NvptxBackwardTileOps::probabilityFragments(const Tile &s, unsigned i,
                                           unsigned kk) {
  bool shared = s.role == TileRole::ScoresT || pitches.count(s.storage);
  if (!shared)
    return NvptxMmaTileOps::probabilityFragments(s, i, kk);
  assert(scoresBase && "read inside a product");
  Value *out[4];
  if (s.role == TileRole::ScoresT) // keys (m) i, queries (k) kk
    ldmatrix(fragmentAt(s, scoresBase, kk * 16, i * 16), /*transposed=*/true,
             out);
  else // dS: queries (m) i, keys (k) kk
    ldmatrix(fragmentAt(s, scoresBase, i * 16, kk * 16), /*transposed=*/false,
             out);
  return {out[0], out[1], out[2], out[3]};
}

void NvptxBackwardTileOps::storeAdd(const Tile &t, const GlobalRows &dst,
                                    Value *valid) {
  withOrigin(queryRow0, gradCol0,
             [&] { addToGlobal(t, dst, valid, pairAdds); });
}

std::unique_ptr<TileOps>
fmhajit::createNvptxBackwardTileOps(IRBuilderBase &b, GpuTargetInfo &target) {
  return std::make_unique<NvptxBackwardTileOps>(
      b, target, *findArch(target.kernelSpec().target));
}
