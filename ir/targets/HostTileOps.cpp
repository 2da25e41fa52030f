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
#include "ir/targets/HostMicroKernel.h"
#include "ir/targets/HostTarget.h"
#include "ir/targets/HostTileOpsImpl.h"
#include "llvm/IR/Intrinsics.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

// O's rows are physical rows: the micro-kernel scales each accumulator row
// as it loads it, sparing a pass over O. S^T's rows are physical columns,
// which only the generic pass handles; so does O on AMX tiles, whose
// accumulators load straight from memory.
void HostTileOps::mmaRescaled(Tile &acc, const RowVec &accScale, const Tile &a,
                              const Tile &bt) {
  if (layoutOf(acc).transposed || amx)
    return TileOps::mmaRescaled(acc, accScale, a, bt);
  product(acc, a, bt, AccStart::LoadScaled, &accScale);
}

void HostTileOps::product(Tile &acc, const Tile &a, const Tile &bt,
                          AccStart start, const RowVec *accScale) {
  if (amx)
    return productOnAmx(acc, a, bt, start);
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

std::unique_ptr<TileOps> fmhajit::createHostTileOps(IRBuilderBase &b,
                                                    unsigned lanes, bool amx,
                                                    bool packsAtLoad) {
  return std::make_unique<HostTileOps>(b, lanes, amx, packsAtLoad);
}
