//===- HostTileOpsImpl.h - The host tile ops, declared for their files ----===//
//
// The host's TileOps (created by HostTileOps.h's factory), declared here so
// that their words are defined in three files: HostTileOps.cpp (products on
// FMAs, maps, reductions, stores; its header says how tiles are laid out and
// multiplied), HostTileLoads.cpp (tiles and row vectors from global rows)
// and HostTileOpsAmx.cpp (products on AMX tiles, HostAmx.h, and the packed
// operand copies they keep).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Loops.h"
#include "ir/TileOps.h"
#include "ir/targets/HostAmx.h"
#include "specs/pipelines/VectorLayout.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace fmhajit {

class HostTileOps : public TileOps {
public:
  HostTileOps(llvm::IRBuilderBase &b, unsigned lanes, bool amx,
              bool packsAtLoad)
      : b(b), lanes(lanes), amx(amx), packsAtLoad(packsAtLoad),
        vec(llvm::FixedVectorType::get(b.getFloatTy(), lanes)) {
    // Validation keeps every tile edge a multiple of kMaxLanes.
    assert(VectorLayout::kMaxLanes % lanes == 0 &&
           "a vector wider than VectorLayout allows");
  }

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const llvm::Twine &name) override {
    Tile t{role, rows, cols,
           entryAlloca(b, b.getFloatTy(), name, 64, rows * cols)};
    if (amx)
      packs[t.storage] = {{packFlag(), packFlag(), packFlag()}, {}, {}};
    return t;
  }
  RowVec makeRowVec(unsigned rows, const llvm::Twine &name) override {
    return {rows, entryAlloca(b, b.getFloatTy(), name, 64, rows)};
  }
  void fill(Tile &t, float value) override {
    wrote(t);
    emitFor(b, t.rows * t.cols / lanes, "fill", [&](llvm::Value *i) {
      storeVec(t.storage, b.CreateMul(i, b.getInt64(lanes)), splat(value));
    });
  }
  void fill(RowVec &r, float value) override {
    for (unsigned c = 0; c < r.rows / lanes; ++c)
      storeVec(r.storage, b.getInt64(c * lanes), splat(value));
  }

  void load(Tile &t, const GlobalRows &src, llvm::Value *valid,
            llvm::Value *scale) override;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override {
    product(acc, a, bt, AccStart::Load);
  }
  void matmul(Tile &acc, const Tile &a, const Tile &bt) override {
    product(acc, a, bt, AccStart::Zero);
  }
  void mmaRescaled(Tile &acc, const RowVec &accScale, const Tile &a,
                   const Tile &bt) override;
  void map(Tile &t, ElementFn fn) override;
  void mapWithRow(Tile &t, const RowVec &row, WithRowFn fn) override;
  void mapWithRowThenSum(Tile &t, const RowVec &row, WithRowFn fn,
                         RowVec &sum) override;
  void reduceRows(const Tile &t, RowVec &out, bool isMax) override;
  void mapRows(RowVec &out, llvm::ArrayRef<const RowVec *> in,
               RowFn fn) override;
  void store(const Tile &t, const GlobalRows &dst, llvm::Value *valid) override;
  void store(const RowVec &r, const GlobalRows &dst,
             llvm::Value *valid) override;
  void limitQueryRows(llvm::Value *rows) override { queryRows = rows; }
  Tile transposed(const Tile &t) override;
  void zip(Tile &t, const Tile &other, ZipFn fn) override;
  void loadRows(RowVec &r, const GlobalRows &src, llvm::Value *valid,
                float fill) override;
  bool warmsRows() const override { return true; }
  void warmRows(const GlobalRows &src, llvm::Value *valid,
                unsigned cols) override;

private:
  static bool isTransposed(TileRole r) {
    return r == TileRole::Query || r == TileRole::Scores || r == TileRole::KeyT;
  }

  struct Layout {
    unsigned physRows, physCols;
    bool transposed;
  };

  static Layout layoutOf(const Tile &t) {
    bool tr = isTransposed(t.role);
    return {tr ? t.cols : t.rows, tr ? t.rows : t.cols, tr};
  }

  llvm::Value *splat(float v) {
    return llvm::ConstantVector::getSplat(
        vec->getElementCount(), llvm::ConstantFP::get(b.getFloatTy(), v));
  }
  llvm::Value *at(llvm::Value *base, llvm::Value *index) {
    return b.CreateInBoundsGEP(b.getFloatTy(), base, index);
  }
  llvm::Value *loadVec(llvm::Value *base, llvm::Value *index) {
    return b.CreateAlignedLoad(vec, at(base, index), llvm::Align(4));
  }
  void storeVec(llvm::Value *base, llvm::Value *index, llvm::Value *v) {
    b.CreateAlignedStore(v, at(base, index), llvm::Align(4));
  }
  /// <c*L, c*L+1, ...> as i32 lanes: the coordinates of vector chunk c.
  llvm::Value *laneCoords(unsigned chunk) {
    llvm::SmallVector<llvm::Constant *, 16> coords;
    for (unsigned l = 0; l < lanes; ++l)
      coords.push_back(b.getInt32(chunk * lanes + l));
    return llvm::ConstantVector::get(coords);
  }
  llvm::Value *narrow(llvm::Value *x, DType dtype, llvm::FixedVectorType *to);
  /// What the micro-kernel's accumulators start from.
  enum class AccStart { Load, Zero, LoadScaled };
  /// acc = start + a * bt, where start is acc, 0, or acc times \p accScale
  /// (row by row) as it is loaded.
  void product(Tile &acc, const Tile &a, const Tile &bt, AccStart start,
               const RowVec *accScale = nullptr);
  /// product() on the tile unit (HostAmx.h); a scale that load() left
  /// pending on an operand multiplies the result.
  /// (No LoadScaled start: mmaRescaled scales O in a pass first.)
  void productOnAmx(Tile &acc, const Tile &a, const Tile &bt, AccStart start);
  /// \p t packed as \p p's left (A') or right (B') operand: a tile keeps
  /// its packed copies until it is written (Q across a forward item's key
  /// steps, K and V across a backward key item's query steps).
  llvm::Value *packedOperand(const Tile &t, bool left, const AmxProduct &p);
  /// An i1 in the frame, false from the kernel's entry on.
  llvm::Value *packFlag();
  /// \p t's packed copies are stale (every word that writes a tile says so).
  void wrote(const Tile &t);
  /// load() of a whole K or V tile under packsAtLoad: when all its rows are
  /// valid, they are copied from memory into the packed operand of the
  /// product that reads the tile, which then packs nothing; else load()'s
  /// fp32 rows, packed by that product.
  void loadIntoPack(Tile &t, const GlobalRows &src, llvm::Value *valid);
  using CombineFn =
      llvm::function_ref<llvm::Value *(llvm::Value *x, llvm::Value *acc)>;
  using MapFn = llvm::function_ref<llvm::Value *(
      llvm::Value *index, unsigned chunk, llvm::Value *x)>;
  /// out[logical row] = combine over the physical rows of a transposed \p t,
  /// from \p identity; each vector is first passed through \p mapFirst
  /// (with its element index and chunk of the physical row), when given.
  void reduceDown(const Tile &t, RowVec &out, const llvm::Twine &name,
                  CombineFn combine, float identity, MapFn mapFirst = nullptr);
  /// L elements of \p src from \p ptr as fp32, times \p scale if given.
  llvm::Value *loadSourceVec(const GlobalRows &src, llvm::Value *ptr,
                             llvm::Value *scale);
  void loadRow(const Tile &t, const GlobalRows &src, llvm::Value *r,
               llvm::Value *scale);
  void zeroRow(const Tile &t, llvm::Value *r);
  /// Every source row of \p t (its rows, or its columns for KeyT) by
  /// loadOrZeroRow: load()'s rows for all but Query tiles.
  void loadEachRow(const Tile &t, const GlobalRows &src, llvm::Value *valid,
                   llvm::Value *scale);
  /// Row \p r (i64) of \p t from \p src if it is below \p valid, else 0.
  void loadOrZeroRow(const Tile &t, const GlobalRows &src, llvm::Value *valid,
                     llvm::Value *r, llvm::Value *scale);
  /// load() of a Query tile, which is stored transposed.
  void loadTransposed(Tile &t, const GlobalRows &src, llvm::Value *valid,
                      llvm::Value *scale);

  /// End of the micro-kernel's loop over \p extent (i64) of \p acc: a
  /// dimension of query rows stops at the first whole \p step past the
  /// live ones.
  llvm::Value *liveExtent(const Tile &acc, bool queryDim, unsigned extent,
                          unsigned step);

  llvm::IRBuilderBase &b;
  unsigned lanes;
  /// Products on AMX tiles (bf16 kernels on CPUs with AMX-BF16). A Query
  /// tile's scale is then not applied at the load but to the product's
  /// result, as the GPU does: Q * scale rounded to bf16 would no longer be
  /// the input, and the scores (and the LSE) would lose their fp32 accuracy.
  bool amx;
  /// K and V tiles load into their one product's packed operand (AMX, the
  /// forward: the backward reads them in more than one product).
  bool packsAtLoad;
  /// tile storage -> scale
  llvm::DenseMap<llvm::Value *, llvm::Value *> pendingScale;
  /// Per tile's storage, for each form it may be packed in (A' read along
  /// k, A' read along m, B'): a "the packed copy is current" flag (i1 in
  /// the frame), the copy, and the product shape it was packed for. Views
  /// share their tile's storage (dS and its dS^T are one buffer), so the
  /// form, not the tile, tells the copies apart.
  enum PackForm : unsigned { LeftAlongK, LeftAlongM, Right, kPackForms };
  struct Packs {
    llvm::Value *fresh[kPackForms];
    llvm::Value *buffer[kPackForms];
    std::pair<unsigned, unsigned> shape[kPackForms];
  };
  llvm::DenseMap<llvm::Value *, Packs> packs;
  llvm::FixedVectorType *vec;
  llvm::Value *queryRows = nullptr; ///< i32; null: every row is live
};

} // namespace fmhajit
