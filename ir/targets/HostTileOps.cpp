//===- HostTileOps.cpp - Tiles as stack buffers with vector loops ---------===//
//
// Layouts (physical buffers are row-major fp32):
//   Query  [bm][d]  stored as Q^T [d][bm]      Scores [bm][bn] stored as S^T
//   [bn][bm] KeyT   [d][bn]  stored as K   [bn][d]      Value  [bn][dv], Output
//   [bm][dv] as is
// so S^T = K * Q^T and O += P * V both have the form acc[M][N] += A[M][K] *
// B[K][N] with B's rows contiguous: the micro-kernel keeps an R x C block of <L
// x float> accumulators in registers, broadcasts A(m, k) and streams B's row k:
//   acc[r][c] = fmuladd(splat(A(m0 + r, k)), B[k][n0 + c*L ...], acc[r][c])
//
//===----------------------------------------------------------------------===//
#include "ir/targets/HostTileOps.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/targets/HostAmx.h"
#include "ir/targets/HostMicroKernel.h"
#include "ir/targets/HostTarget.h"
#include "ir/targets/HostTranspose.h"
#include "specs/pipelines/VectorLayout.h"
#include "llvm/IR/Intrinsics.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

namespace {
bool isTransposed(TileRole r) {
  return r == TileRole::Query || r == TileRole::Scores || r == TileRole::KeyT;
}

struct Layout {
  unsigned physRows, physCols;
  bool transposed;
};

Layout layoutOf(const Tile &t) {
  bool tr = isTransposed(t.role);
  return {tr ? t.cols : t.rows, tr ? t.rows : t.cols, tr};
}

class HostTileOps : public TileOps {
public:
  HostTileOps(IRBuilderBase &b, unsigned lanes, bool amx)
      : b(b), lanes(lanes), amx(amx),
        vec(FixedVectorType::get(b.getFloatTy(), lanes)) {
    // Validation keeps every tile edge a multiple of kMaxLanes.
    assert(VectorLayout::kMaxLanes % lanes == 0 &&
           "a vector wider than VectorLayout allows");
  }

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override {
    Tile t{role, rows, cols,
           entryAlloca(b, b.getFloatTy(), name, 64, rows * cols)};
    if (amx)
      packs[t.storage] = {{packFlag(), packFlag(), packFlag()}, {}, {}};
    return t;
  }
  RowVec makeRowVec(unsigned rows, const Twine &name) override {
    return {rows, entryAlloca(b, b.getFloatTy(), name, 64, rows)};
  }
  void fill(Tile &t, float value) override {
    wrote(t);
    emitFor(b, t.rows * t.cols / lanes, "fill", [&](Value *i) {
      storeVec(t.storage, b.CreateMul(i, b.getInt64(lanes)), splat(value));
    });
  }
  void fill(RowVec &r, float value) override {
    for (unsigned c = 0; c < r.rows / lanes; ++c)
      storeVec(r.storage, b.getInt64(c * lanes), splat(value));
  }

  void load(Tile &t, const GlobalRows &src, Value *valid,
            Value *scale) override;
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
  void mapRows(RowVec &out, ArrayRef<const RowVec *> in, RowFn fn) override;
  void store(const Tile &t, const GlobalRows &dst, Value *valid) override;
  void store(const RowVec &r, const GlobalRows &dst, Value *valid) override;
  void limitQueryRows(Value *rows) override { queryRows = rows; }
  Tile transposed(const Tile &t) override;
  void zip(Tile &t, const Tile &other, ZipFn fn) override;
  void loadRows(RowVec &r, const GlobalRows &src, Value *valid,
                float fill) override;

private:
  Value *splat(float v) {
    return ConstantVector::getSplat(vec->getElementCount(),
                                    ConstantFP::get(b.getFloatTy(), v));
  }
  Value *at(Value *base, Value *index) {
    return b.CreateInBoundsGEP(b.getFloatTy(), base, index);
  }
  Value *loadVec(Value *base, Value *index) {
    return b.CreateAlignedLoad(vec, at(base, index), Align(4));
  }
  void storeVec(Value *base, Value *index, Value *v) {
    b.CreateAlignedStore(v, at(base, index), Align(4));
  }
  /// <c*L, c*L+1, ...> as i32 lanes: the coordinates of vector chunk c.
  Value *laneCoords(unsigned chunk) {
    SmallVector<Constant *, 16> coords;
    for (unsigned l = 0; l < lanes; ++l)
      coords.push_back(b.getInt32(chunk * lanes + l));
    return ConstantVector::get(coords);
  }
  Value *narrow(Value *x, DType dtype, FixedVectorType *to);
  /// What the micro-kernel's accumulators start from.
  enum class AccStart { Load, Zero, LoadScaled };
  /// acc = start + a * bt, where start is acc, 0, or acc times \p accScale
  /// (row by row) as it is loaded.
  void product(Tile &acc, const Tile &a, const Tile &bt, AccStart start,
               const RowVec *accScale = nullptr);
  /// product() on the tile unit (HostAmx.h); a scale that load() left
  /// pending on an operand multiplies the result.
  void productOnAmx(Tile &acc, const Tile &a, const Tile &bt, AccStart start,
                    const RowVec *accScale);
  /// acc's rows times \p accScale's (a LoadScaled start done apart).
  void scaleRows(Tile &acc, const RowVec &accScale);
  /// \p t packed as \p p's left (A') or right (B') operand: a tile keeps
  /// its packed copies until it is written (Q across a forward item's key
  /// steps, K and V across a backward key item's query steps).
  Value *packedOperand(const Tile &t, bool left, const AmxProduct &p);
  /// An i1 in the frame, false from the kernel's entry on.
  Value *packFlag();
  /// \p t's packed copies are stale (every word that writes a tile says so).
  void wrote(const Tile &t);
  using CombineFn = function_ref<Value *(Value *x, Value *acc)>;
  using MapFn = function_ref<Value *(Value *index, unsigned chunk, Value *x)>;
  /// out[logical row] = combine over the physical rows of a transposed \p t,
  /// from \p identity; each vector is first passed through \p mapFirst
  /// (with its element index and chunk of the physical row), when given.
  void reduceDown(const Tile &t, RowVec &out, const Twine &name,
                  CombineFn combine, float identity, MapFn mapFirst = nullptr);
  /// L elements of \p src from \p ptr as fp32, times \p scale if given.
  Value *loadSourceVec(const GlobalRows &src, Value *ptr, Value *scale);
  void loadRow(const Tile &t, const GlobalRows &src, Value *r, Value *scale);
  void zeroRow(const Tile &t, Value *r);
  /// Row \p r (i64) of \p t from \p src if it is below \p valid, else 0.
  void loadOrZeroRow(const Tile &t, const GlobalRows &src, Value *valid,
                     Value *r, Value *scale);
  /// load() of a Query tile, which is stored transposed.
  void loadTransposed(Tile &t, const GlobalRows &src, Value *valid,
                      Value *scale);

  /// End of the micro-kernel's loop over \p extent (i64) of \p acc: a
  /// dimension of query rows stops at the first whole \p step past the
  /// live ones.
  Value *liveExtent(const Tile &acc, bool queryDim, unsigned extent,
                    unsigned step);

  IRBuilderBase &b;
  unsigned lanes;
  /// Products on AMX tiles (bf16 kernels on CPUs with AMX-BF16). A Query
  /// tile's scale is then not applied at the load but to the product's
  /// result, as the GPU does: Q * scale rounded to bf16 would no longer be
  /// the input, and the scores (and the LSE) would lose their fp32 accuracy.
  bool amx;
  DenseMap<Value *, Value *> pendingScale; ///< tile storage -> scale
  /// Per tile's storage, for each form it may be packed in (A' read along
  /// k, A' read along m, B'): a "the packed copy is current" flag (i1 in
  /// the frame), the copy, and the product shape it was packed for. Views
  /// share their tile's storage (dS and its dS^T are one buffer), so the
  /// form, not the tile, tells the copies apart.
  enum PackForm : unsigned { LeftAlongK, LeftAlongM, Right, kPackForms };
  struct Packs {
    Value *fresh[kPackForms];
    Value *buffer[kPackForms];
    std::pair<unsigned, unsigned> shape[kPackForms];
  };
  DenseMap<Value *, Packs> packs;
  FixedVectorType *vec;
  Value *queryRows = nullptr; ///< i32; null: every row is live
};
} // namespace

Value *HostTileOps::loadSourceVec(const GlobalRows &src, Value *ptr,
                                  Value *scale) {
  Type *elem = elementType(b.getContext(), src.dtype);
  Value *x = b.CreateAlignedLoad(FixedVectorType::get(elem, lanes), ptr,
                                 Align(elem->getPrimitiveSizeInBits() / 8));
  if (!elem->isFloatTy())
    x = b.CreateFPExt(x, vec);
  if (scale)
    x = b.CreateFMul(x, b.CreateVectorSplat(lanes, scale));
  return x;
}

// Source row r becomes physical row r (Value, KeyT) or physical column r
// (Query, stored transposed: a scatter, which loadTransposed keeps to the
// rows of a partial block). Chunks are an IR loop, not unrolled here: a loop
// body with hundreds of memory accesses makes LLVM's loop-access analyses
// quadratic.
void HostTileOps::loadRow(const Tile &t, const GlobalRows &src, Value *r,
                          Value *scale) {
  Layout layout = layoutOf(t);
  bool scatter = t.role == TileRole::Query;
  unsigned width = scatter ? t.cols : layout.physCols;
  Type *elem = elementType(b.getContext(), src.dtype);
  Value *rowPtr = src.rowPointer(b, r);
  emitFor(
      b, b.getInt64(0), b.getInt64(width), b.getInt64(lanes), "chunk",
      [&](Value *e0) {
        Value *x =
            loadSourceVec(src, b.CreateInBoundsGEP(elem, rowPtr, e0), scale);
        if (!scatter) {
          storeVec(t.storage,
                   b.CreateAdd(b.CreateMul(r, b.getInt64(width)), e0), x);
          return;
        }
        for (unsigned l = 0; l < lanes; ++l) {
          Value *e = b.CreateAdd(e0, b.getInt64(l));
          b.CreateStore(
              b.CreateExtractElement(x, l),
              at(t.storage,
                 b.CreateAdd(b.CreateMul(e, b.getInt64(layout.physCols)), r)));
        }
      });
}

void HostTileOps::zeroRow(const Tile &t, Value *r) {
  Layout layout = layoutOf(t);
  if (t.role != TileRole::Query) {
    Value *rowStart = b.CreateMul(r, b.getInt64(layout.physCols));
    emitFor(b, b.getInt64(0), b.getInt64(layout.physCols), b.getInt64(lanes),
            "zero", [&](Value *e0) {
              storeVec(t.storage, b.CreateAdd(rowStart, e0), splat(0));
            });
    return;
  }
  emitFor(b, t.cols, "zero", [&](Value *e) {
    b.CreateStore(
        ConstantFP::get(b.getFloatTy(), 0.0),
        at(t.storage,
           b.CreateAdd(b.CreateMul(e, b.getInt64(layout.physCols)), r)));
  });
}

void HostTileOps::loadOrZeroRow(const Tile &t, const GlobalRows &src,
                                Value *valid, Value *r, Value *scale) {
  Value *inside = b.CreateICmpSLT(b.CreateTrunc(r, b.getInt32Ty()), valid);
  emitIfElse(
      b, inside, "row", [&] { loadRow(t, src, r, scale); },
      [&] { zeroRow(t, r); });
}

void HostTileOps::load(Tile &t, const GlobalRows &src, Value *valid,
                       Value *scale) {
  pendingScale.erase(t.storage);
  if (amx && t.role == TileRole::Query && scale) {
    pendingScale[t.storage] = scale;
    scale = nullptr;
  }
  wrote(t);
  if (t.role == TileRole::Query)
    return loadTransposed(t, src, valid, scale);
  unsigned sourceRows = t.role == TileRole::KeyT ? t.cols : t.rows;
  emitFor(b, sourceRows, "load",
          [&](Value *r) { loadOrZeroRow(t, src, valid, r, scale); });
}

// A block of L source rows, all valid, is read as L vectors per chunk of L
// elements, transposed in registers and stored as L vectors (key items load
// Q and dO this way at every step); a block that reaches past the valid rows
// goes row by row.
void HostTileOps::loadTransposed(Tile &t, const GlobalRows &src, Value *valid,
                                 Value *scale) {
  unsigned physCols = layoutOf(t).physCols;
  Type *elem = elementType(b.getContext(), src.dtype);
  emitFor(b, t.rows / lanes, "load.block", [&](Value *block) {
    Value *r0 = b.CreateMul(block, b.getInt64(lanes));
    Value *end =
        b.CreateTrunc(b.CreateAdd(r0, b.getInt64(lanes)), b.getInt32Ty());
    emitIfElse(
        b, b.CreateICmpSLE(end, valid), "whole",
        [&] {
          emitFor(b, b.getInt64(0), b.getInt64(t.cols), b.getInt64(lanes),
                  "chunk.t", [&](Value *e0) {
                    SmallVector<Value *, 16> rows;
                    for (unsigned l = 0; l < lanes; ++l) {
                      Value *r = b.CreateAdd(r0, b.getInt64(l));
                      Value *ptr =
                          b.CreateInBoundsGEP(elem, src.rowPointer(b, r), e0);
                      rows.push_back(loadSourceVec(src, ptr, scale));
                    }
                    SmallVector<Value *, 16> cols = transposeSquare(b, rows);
                    for (unsigned l = 0; l < lanes; ++l) {
                      Value *e = b.CreateAdd(e0, b.getInt64(l));
                      storeVec(
                          t.storage,
                          b.CreateAdd(b.CreateMul(e, b.getInt64(physCols)), r0),
                          cols[l]);
                    }
                  });
        },
        [&] {
          emitFor(b, lanes, "load.tail", [&](Value *l) {
            loadOrZeroRow(t, src, valid, b.CreateAdd(r0, l), scale);
          });
        });
  });
}

// O's rows are physical rows: the micro-kernel scales each accumulator row
// as it loads it, sparing a pass over O. S^T's rows are physical columns,
// which only the generic pass handles.
void HostTileOps::mmaRescaled(Tile &acc, const RowVec &accScale, const Tile &a,
                              const Tile &bt) {
  if (layoutOf(acc).transposed)
    return TileOps::mmaRescaled(acc, accScale, a, bt);
  product(acc, a, bt, AccStart::LoadScaled, &accScale);
}

void HostTileOps::product(Tile &acc, const Tile &a, const Tile &bt,
                          AccStart start, const RowVec *accScale) {
  if (amx)
    return productOnAmx(acc, a, bt, start, accScale);
  Layout layout = layoutOf(acc);
  unsigned M = layout.physRows, N = layout.physCols, K = a.cols;
  // A'(m, k) = transposed acc ? bt(k, m) : a(m, k), at m*strideM + k*strideK.
  const Tile &aSrc = layout.transposed ? bt : a;
  bool aT = isTransposed(aSrc.role);
  unsigned strideM, strideK;
  if (layout.transposed) {
    strideM = aT ? aSrc.rows : 1;
    strideK = aT ? 1 : aSrc.cols;
  } else {
    strideM = aT ? 1 : aSrc.cols;
    strideK = aT ? aSrc.rows : 1;
  }
  // B'[k][n] row-major: a^T (a's buffer) for a transposed acc, else bt's.
  Value *bBase = layout.transposed ? a.storage : bt.storage;
  unsigned C = blockColumns(N / lanes, lanes);
  unsigned R = blockRows(M, C, lanes);
  // Query rows are acc's physical columns when it is transposed (S^T).
  Value *mEnd = liveExtent(acc, !layout.transposed, M, R);
  Value *nEnd = liveExtent(acc, layout.transposed, N, C * lanes);
  // n outer: the K x C*L panel of B stays in L1 while A's rows stream by.
  emitFor(
      b, b.getInt64(0), nEnd, b.getInt64(C * lanes), "mma.n", [&](Value *n0) {
        emitFor(b, b.getInt64(0), mEnd, b.getInt64(R), "mma.m", [&](Value *m0) {
          auto accIndex = [&](unsigned r, unsigned c) {
            return b.CreateAdd(
                b.CreateMul(b.CreateAdd(m0, b.getInt64(r)), b.getInt64(N)),
                b.CreateAdd(n0, b.getInt64(c * lanes)));
          };
          SmallVector<Value *, 16> init;
          for (unsigned r = 0; r < R; ++r) {
            Value *rowScale =
                start == AccStart::LoadScaled
                    ? b.CreateVectorSplat(
                          lanes,
                          b.CreateLoad(b.getFloatTy(),
                                       at(accScale->storage,
                                          b.CreateAdd(m0, b.getInt64(r)))))
                    : nullptr;
            for (unsigned c = 0; c < C; ++c) {
              Value *x = start == AccStart::Zero
                             ? splat(0)
                             : loadVec(acc.storage, accIndex(r, c));
              init.push_back(rowScale ? b.CreateFMul(x, rowScale) : x);
            }
          }
          auto sums = emitForCarried(
              b, b.getInt64(0), b.getInt64(K), b.getInt64(1), "mma.k", init,
              [&](Value *k, ArrayRef<Value *> cur) {
                SmallVector<Value *, 8> bRow;
                for (unsigned c = 0; c < C; ++c)
                  bRow.push_back(loadVec(
                      bBase,
                      b.CreateAdd(b.CreateMul(k, b.getInt64(N)),
                                  b.CreateAdd(n0, b.getInt64(c * lanes)))));
                SmallVector<Value *, 16> next;
                for (unsigned r = 0; r < R; ++r) {
                  Value *aIndex =
                      b.CreateAdd(b.CreateMul(b.CreateAdd(m0, b.getInt64(r)),
                                              b.getInt64(strideM)),
                                  b.CreateMul(k, b.getInt64(strideK)));
                  Value *aValue = b.CreateVectorSplat(
                      lanes,
                      b.CreateLoad(b.getFloatTy(), at(aSrc.storage, aIndex)));
                  for (unsigned c = 0; c < C; ++c)
                    next.push_back(
                        b.CreateIntrinsic(Intrinsic::fmuladd, {vec},
                                          {aValue, bRow[c], cur[r * C + c]}));
                }
                return next;
              });
          for (unsigned r = 0; r < R; ++r)
            for (unsigned c = 0; c < C; ++c)
              storeVec(acc.storage, accIndex(r, c), sums[r * C + c]);
        });
      });
}

void HostTileOps::productOnAmx(Tile &acc, const Tile &a, const Tile &bt,
                               AccStart start, const RowVec *accScale) {
  Layout layout = layoutOf(acc);
  unsigned M = layout.physRows, N = layout.physCols;
  const Tile &aSrc = layout.transposed ? bt : a;
  bool aT = isTransposed(aSrc.role);
  bool kContiguous = layout.transposed == aT;
  unsigned aStride = aT ? aSrc.rows : aSrc.cols;
  wrote(acc);
  if (start == AccStart::LoadScaled)
    scaleRows(acc, *accScale);
  AmxProduct p{acc.storage,
               M,
               N,
               a.cols,
               aSrc.storage,
               kContiguous ? aStride : 1,
               kContiguous ? 1 : aStride,
               layout.transposed ? a.storage : bt.storage,
               liveExtent(acc, !layout.transposed, M, amxBlockRows(M)),
               liveExtent(acc, layout.transposed, N, amxBlockCols(N)),
               start != AccStart::Zero};
  Value *left = packedOperand(aSrc, /*left=*/true, p);
  Value *right = packedOperand(layout.transposed ? a : bt, /*left=*/false, p);
  emitAmxMultiply(b, p, left, right);
  Value *scale = pendingScale.lookup(a.storage);
  if (!scale)
    scale = pendingScale.lookup(bt.storage);
  if (!scale)
    return;
  assert(start == AccStart::Zero &&
         "a pending scale on an accumulated product");
  map(acc, [&](IRBuilderBase &b, Value *, Value *, Value *x) {
    return b.CreateFMul(x, b.CreateVectorSplat(lanes, scale));
  });
}

// A copy packed at a product of the item's first step serves the products
// of its later steps: it is packed whole (not only to the live extent),
// since the live query rows change only with the item, whose loads make it
// stale.
Value *HostTileOps::packedOperand(const Tile &t, bool left,
                                  const AmxProduct &p) {
  auto it = packs.find(t.storage);
  assert(it != packs.end() && "an operand not made by makeTile");
  Packs &cached = it->second;
  PackForm form = !left ? Right : p.strideK == 1 ? LeftAlongK : LeftAlongM;
  std::pair<unsigned, unsigned> shape{left ? p.M : p.K, left ? p.K : p.N};
  auto pack = [&](Value *buffer, const AmxProduct &q) {
    left ? emitAmxPackLeft(b, q, buffer) : emitAmxPackRight(b, q, buffer);
  };
  if (cached.buffer[form] && cached.shape[form] != shape) {
    Value *buffer = left ? amxLeftBuffer(b, p) : amxRightBuffer(b, p);
    pack(buffer, p); // another shape of this form: not kept
    return buffer;
  }
  Value *&buffer = cached.buffer[form];
  if (!buffer) {
    buffer = left ? amxLeftBuffer(b, p) : amxRightBuffer(b, p);
    cached.shape[form] = shape;
  }
  AmxProduct whole = p;
  whole.mEnd = b.getInt64(p.M);
  whole.nEnd = b.getInt64(p.N);
  Value *fresh = cached.fresh[form];
  emitIf(b, b.CreateNot(b.CreateLoad(b.getInt1Ty(), fresh)), "amx.pack", [&] {
    pack(buffer, whole);
    b.CreateStore(b.getTrue(), fresh);
  });
  return buffer;
}

Value *HostTileOps::packFlag() {
  AllocaInst *flag = entryAlloca(b, b.getInt1Ty(), "amx.fresh");
  (new StoreInst(b.getFalse(), flag, false, Align(1)))->insertAfter(flag);
  return flag;
}

void HostTileOps::wrote(const Tile &t) {
  auto it = packs.find(t.storage);
  if (it == packs.end())
    return;
  for (Value *fresh : it->second.fresh)
    b.CreateStore(b.getFalse(), fresh);
}

void HostTileOps::scaleRows(Tile &acc, const RowVec &accScale) {
  emitFor(b, acc.rows, "scale.rows", [&](Value *r) {
    Value *rowScale = b.CreateVectorSplat(
        lanes, b.CreateLoad(b.getFloatTy(), at(accScale.storage, r)));
    Value *rowStart = b.CreateMul(r, b.getInt64(acc.cols));
    for (unsigned c = 0; c < acc.cols / lanes; ++c) {
      Value *index = b.CreateAdd(rowStart, b.getInt64(c * lanes));
      storeVec(acc.storage, index,
               b.CreateFMul(loadVec(acc.storage, index), rowScale));
    }
  });
}

Value *HostTileOps::liveExtent(const Tile &acc, bool queryDim, unsigned extent,
                               unsigned step) {
  bool holdsQueries =
      acc.role == TileRole::Scores || acc.role == TileRole::Output;
  if (!queryRows || !queryDim || !holdsQueries)
    return b.getInt64(extent);
  Value *rows = b.CreateZExt(queryRows, b.getInt64Ty());
  Value *rounded = b.CreateMul(
      b.CreateUDiv(b.CreateAdd(rows, b.getInt64(step - 1)), b.getInt64(step)),
      b.getInt64(step));
  return b.CreateBinaryIntrinsic(Intrinsic::umin, rounded, b.getInt64(extent));
}

void HostTileOps::map(Tile &t, ElementFn fn) {
  wrote(t);
  Layout layout = layoutOf(t);
  emitFor(b, layout.physRows, "map", [&](Value *pr) {
    Value *prCoord =
        b.CreateVectorSplat(lanes, b.CreateTrunc(pr, b.getInt32Ty()));
    for (unsigned c = 0; c < layout.physCols / lanes; ++c) {
      Value *index = b.CreateAdd(b.CreateMul(pr, b.getInt64(layout.physCols)),
                                 b.getInt64(c * lanes));
      Value *lanesCoord = laneCoords(c);
      Value *row = layout.transposed ? lanesCoord : prCoord;
      Value *col = layout.transposed ? prCoord : lanesCoord;
      storeVec(t.storage, index, fn(b, row, col, loadVec(t.storage, index)));
    }
  });
}

void HostTileOps::mapWithRow(Tile &t, const RowVec &row, WithRowFn fn) {
  wrote(t);
  Layout layout = layoutOf(t);
  emitFor(b, layout.physRows, "maprow", [&](Value *pr) {
    Value *perRow =
        layout.transposed
            ? nullptr
            : b.CreateVectorSplat(
                  lanes, b.CreateLoad(b.getFloatTy(), at(row.storage, pr)));
    for (unsigned c = 0; c < layout.physCols / lanes; ++c) {
      Value *index = b.CreateAdd(b.CreateMul(pr, b.getInt64(layout.physCols)),
                                 b.getInt64(c * lanes));
      Value *rowValue =
          perRow ? perRow : loadVec(row.storage, b.getInt64(c * lanes));
      storeVec(t.storage, index, fn(b, loadVec(t.storage, index), rowValue));
    }
  });
}

// Logical rows are physical columns of a transposed tile, so a row reduction
// is an element-wise max/add down the physical rows.
void HostTileOps::reduceRows(const Tile &t, RowVec &out, bool isMax) {
  assert(layoutOf(t).transposed &&
         "host reduces rows of transposed tiles only");
  reduceDown(
      t, out, isMax ? "rowmax" : "rowsum",
      [&](Value *x, Value *acc) {
        // x > acc ? x : acc is one vmaxps; maxnum's NaN handling would cost two
        // more instructions, and acc, which starts at -inf, is never NaN.
        return isMax ? b.CreateSelect(b.CreateFCmpOGT(x, acc), x, acc)
                     : b.CreateFAdd(acc, x);
      },
      isMax ? -INFINITY : 0.0f);
}

void HostTileOps::mapWithRowThenSum(Tile &t, const RowVec &row, WithRowFn fn,
                                    RowVec &sum) {
  wrote(t);
  if (!layoutOf(t).transposed)
    return TileOps::mapWithRowThenSum(t, row, fn, sum);
  reduceDown(
      t, sum, "maprow.sum",
      [&](Value *x, Value *acc) { return b.CreateFAdd(acc, x); }, 0.0f,
      [&](Value *index, unsigned chunk, Value *x) {
        Value *mapped =
            fn(b, x, loadVec(row.storage, b.getInt64(chunk * lanes)));
        storeVec(t.storage, index, mapped);
        return mapped;
      });
}

void HostTileOps::reduceDown(const Tile &t, RowVec &out, const Twine &name,
                             CombineFn combine, float identity,
                             MapFn mapFirst) {
  Layout layout = layoutOf(t);
  unsigned chunks = layout.physCols / lanes;
  SmallVector<Value *, 16> init(chunks, splat(identity));
  auto result = emitForCarried(
      b, b.getInt64(0), b.getInt64(layout.physRows), b.getInt64(1), name, init,
      [&](Value *pr, ArrayRef<Value *> cur) {
        SmallVector<Value *, 16> next;
        for (unsigned c = 0; c < chunks; ++c) {
          Value *index =
              b.CreateAdd(b.CreateMul(pr, b.getInt64(layout.physCols)),
                          b.getInt64(c * lanes));
          Value *x = loadVec(t.storage, index);
          next.push_back(combine(mapFirst ? mapFirst(index, c, x) : x, cur[c]));
        }
        return next;
      });
  for (unsigned c = 0; c < chunks; ++c)
    storeVec(out.storage, b.getInt64(c * lanes), result[c]);
}

void HostTileOps::mapRows(RowVec &out, ArrayRef<const RowVec *> in, RowFn fn) {
  for (unsigned c = 0; c < out.rows / lanes; ++c) {
    SmallVector<Value *, 4> values;
    for (const RowVec *r : in)
      values.push_back(loadVec(r->storage, b.getInt64(c * lanes)));
    storeVec(out.storage, b.getInt64(c * lanes), fn(b, values));
  }
}

Value *HostTileOps::narrow(Value *x, DType dtype, FixedVectorType *to) {
  if (dtype == DType::F32)
    return x;
  if (dtype != DType::BF16)
    return b.CreateFPTrunc(x, to);
  return roundToBf16(b, x);
}

void HostTileOps::store(const Tile &t, const GlobalRows &dst, Value *valid) {
  assert(!isTransposed(t.role) && "host stores row-major tiles only");
  Type *elem = elementType(b.getContext(), dst.dtype);
  auto *dstVec = FixedVectorType::get(elem, lanes);
  emitFor(b, b.getInt32(0), valid, b.getInt32(1), "store", [&](Value *r32) {
    Value *r = b.CreateSExt(r32, b.getInt64Ty());
    Value *rowPtr = dst.rowPointer(b, r);
    for (unsigned c = 0; c < t.cols / lanes; ++c) {
      Value *x =
          loadVec(t.storage, b.CreateAdd(b.CreateMul(r, b.getInt64(t.cols)),
                                         b.getInt64(c * lanes)));
      x = narrow(x, dst.dtype, dstVec);
      b.CreateAlignedStore(
          x, b.CreateConstInBoundsGEP1_64(elem, rowPtr, c * lanes),
          Align(elem->getPrimitiveSizeInBits() / 8));
    }
  });
}

void HostTileOps::store(const RowVec &r, const GlobalRows &dst, Value *valid) {
  emitFor(b, b.getInt32(0), valid, b.getInt32(1), "store.rows", [&](Value *i) {
    Value *x = b.CreateLoad(b.getFloatTy(), at(r.storage, i));
    b.CreateStore(x, dst.rowPointer(b, b.CreateZExt(i, b.getInt64Ty())));
  });
}

// The buffer of a transposed tile is its transpose stored row-major: S^T
// [bn][bm] is a ScoresT tile, K [bn][d] is a Keys tile, as they stand.
Tile HostTileOps::transposed(const Tile &t) {
  assert((t.role == TileRole::Scores || t.role == TileRole::KeyT) &&
         "host transposes Scores and KeyT tiles only");
  TileRole role =
      t.role == TileRole::Scores ? TileRole::ScoresT : TileRole::Keys;
  return {role, t.cols, t.rows, t.storage};
}

void HostTileOps::zip(Tile &t, const Tile &other, ZipFn fn) {
  wrote(t);
  assert(t.role == other.role && t.rows == other.rows && t.cols == other.cols &&
         "zip takes tiles of one layout");
  emitFor(b, t.rows * t.cols / lanes, "zip", [&](Value *i) {
    Value *index = b.CreateMul(i, b.getInt64(lanes));
    storeVec(t.storage, index,
             fn(b, loadVec(t.storage, index), loadVec(other.storage, index)));
  });
}

void HostTileOps::loadRows(RowVec &r, const GlobalRows &src, Value *valid,
                           float fill) {
  emitFor(b, r.rows, "load.rows", [&](Value *i) {
    Value *inside = b.CreateICmpSLT(b.CreateTrunc(i, b.getInt32Ty()), valid);
    emitIfElse(
        b, inside, "row",
        [&] {
          b.CreateStore(b.CreateLoad(b.getFloatTy(), src.rowPointer(b, i)),
                        at(r.storage, i));
        },
        [&] {
          b.CreateStore(ConstantFP::get(b.getFloatTy(), fill),
                        at(r.storage, i));
        });
  });
}

std::unique_ptr<TileOps> fmhajit::createHostTileOps(IRBuilderBase &b,
                                                    unsigned lanes, bool amx) {
  return std::make_unique<HostTileOps>(b, lanes, amx);
}
