//===- GpuSimtTileOps.cpp - GPU tiles without matrix instructions ---------===//
//
// The reference GPU path (pipeline=simt), simple by design:
//  - Query, KeyT (stored as the K rows), Value and Scores tiles are fp32 in
//    shared memory, each row padded by one word so column walks hit distinct
//    banks; row vectors (m, l, ...) are shared too. SimtLayout
//    (specs/pipelines) places them, for validation and for this file.
//  - The Output accumulator is in registers: thread t owns a micro-tile of
//    rb rows x cb columns, rows (t / tx)*rb + i, columns t % tx + j*tx, so a
//    warp's loads and stores touch consecutive columns.
//  - Products keep an rb x cb block of sums in registers:
//      for k: acc[i][j] = fmuladd(A(r_i, k), B(k, c_j), acc[i][j])
//  - Every operation that writes shared memory ends with a barrier, and
//    loads start with one (the previous tile may still be read).
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include "specs/pipelines/SimtLayout.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

namespace {
/// How T threads cover a rows x cols tile: tx threads along columns, ty along
/// rows, each owning rb x cb elements. Threads past tx*ty idle.
struct ThreadGrid {
  unsigned tx = 1, ty = 1, rb = 1, cb = 1;
};

ThreadGrid threadGrid(unsigned rows, unsigned cols, unsigned threads) {
  ThreadGrid best;
  unsigned bestUsed = 0, bestCost = ~0u;
  for (unsigned tx = 1; tx <= std::min(cols, threads); ++tx) {
    if (cols % tx)
      continue;
    for (unsigned ty = std::min(rows, threads / tx); ty >= 1; --ty) {
      if (rows % ty)
        continue;
      unsigned used = tx * ty, cost = rows / ty + cols / tx;
      if (used > bestUsed || (used == bestUsed && cost < bestCost)) {
        best = {tx, ty, rows / ty, cols / tx};
        bestUsed = used;
        bestCost = cost;
      }
      break; // the largest ty for this tx
    }
  }
  return best;
}

class GpuSimtTileOps : public TileOps {
public:
  GpuSimtTileOps(IRBuilderBase &b, GpuTargetInfo &target)
      : b(b), target(target), threads(target.numThreads()),
        layout(target.kernelSpec()) {
    smem = target.sharedMemory(b, layout.bytes());
    tid = target.threadId(b);
  }

  Tile makeTile(TileRole role, unsigned rows, unsigned cols,
                const Twine &name) override {
    if (role == TileRole::Output) {
      ThreadGrid g = threadGrid(rows, cols, threads);
      return {role, rows, cols,
              entryAlloca(b, b.getFloatTy(), name, 4, g.rb * g.cb)};
    }
    return {role, rows, cols, sharedAt(sharedTile(role).offset)};
  }
  RowVec makeRowVec(unsigned rows, const Twine &) override {
    assert(rowVectors < SimtLayout::kRowVectors &&
           "the recipe makes more row vectors than SimtLayout places");
    return {rows, sharedAt(layout.rowVectorOffset(rowVectors++))};
  }

  void fill(Tile &t, float value) override {
    if (t.role == TileRole::Output) {
      ThreadGrid g = threadGrid(t.rows, t.cols, threads);
      for (unsigned e = 0; e < g.rb * g.cb; ++e)
        b.CreateStore(f32(value), at(t.storage, b.getInt32(e)));
      return;
    }
    forEachShared(t.rows * t.cols, "fill", [&](Value *e) {
      Value *r = b.CreateUDiv(e, b.getInt32(t.cols)),
            *c = b.CreateURem(e, b.getInt32(t.cols));
      b.CreateStore(f32(value), at(t.storage, sharedIndex(t, r, c)));
    });
    target.barrier(b);
  }
  void fill(RowVec &r, float value) override {
    forEachShared(r.rows, "fill.rows", [&](Value *i) {
      b.CreateStore(f32(value), at(r.storage, i));
    });
    target.barrier(b);
  }

  void load(Tile &t, const GlobalRows &src, Value *valid,
            Value *scale) override;
  void mma(Tile &acc, const Tile &a, const Tile &bt) override;
  void map(Tile &t, ElementFn fn) override;
  void mapWithRow(Tile &t, const RowVec &row, WithRowFn fn) override;
  void reduceRows(const Tile &t, RowVec &out, bool isMax) override;
  void mapRows(RowVec &out, ArrayRef<const RowVec *> in, RowFn fn) override;
  void store(const Tile &t, const GlobalRows &dst, Value *valid) override;
  void store(const RowVec &r, const GlobalRows &dst, Value *valid) override;

private:
  Value *f32(float v) { return ConstantFP::get(b.getFloatTy(), v); }
  Value *at(Value *base, Value *index) {
    return b.CreateInBoundsGEP(b.getFloatTy(), base, index);
  }
  Value *sharedAt(unsigned offset) {
    return b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, offset);
  }
  const SharedTile &sharedTile(TileRole role) const {
    switch (role) {
    case TileRole::Query:
      return layout.query;
    case TileRole::KeyT:
      return layout.keys;
    case TileRole::Value:
      return layout.values;
    case TileRole::Scores:
      return layout.scores;
    case TileRole::Output:
    case TileRole::Probabilities:
      break;
    }
    llvm_unreachable("the output accumulator is in registers");
  }
  /// Element (r, c) of a shared tile; KeyT's physical rows are its columns.
  Value *sharedIndex(const Tile &t, Value *r, Value *c) {
    bool byColumn = t.role == TileRole::KeyT;
    unsigned pitch = sharedTile(t.role).pitch;
    return b.CreateAdd(b.CreateMul(byColumn ? c : r, b.getInt32(pitch)),
                       byColumn ? r : c);
  }
  /// for (e = tid; e < count; e += threads) body(e)
  void forEachShared(unsigned count, const Twine &name,
                     function_ref<void(Value *)> body) {
    emitFor(b, tid, b.getInt32(count), b.getInt32(threads), name, body);
  }
  /// Calls body(i, j, row, col) for each element this thread owns in an
  /// output-shaped micro-tile (idle threads skip it).
  void
  forEachOwned(const Tile &t,
               function_ref<void(unsigned, unsigned, Value *, Value *)> body) {
    ThreadGrid g = threadGrid(t.rows, t.cols, threads);
    emitIf(b, b.CreateICmpULT(tid, b.getInt32(g.tx * g.ty)), "owned", [&] {
      Value *row0 =
          b.CreateMul(b.CreateUDiv(tid, b.getInt32(g.tx)), b.getInt32(g.rb));
      Value *col0 = b.CreateURem(tid, b.getInt32(g.tx));
      for (unsigned i = 0; i < g.rb; ++i)
        for (unsigned j = 0; j < g.cb; ++j)
          body(i, j, b.CreateAdd(row0, b.getInt32(i)),
               b.CreateAdd(col0, b.getInt32(j * g.tx)));
    });
  }

  IRBuilderBase &b;
  GpuTargetInfo &target;
  unsigned threads;
  SimtLayout layout;
  unsigned rowVectors = 0; ///< row vectors made so far
  Value *smem = nullptr;
  Value *tid = nullptr;
};
} // namespace

void GpuSimtTileOps::load(Tile &t, const GlobalRows &src, Value *valid,
                          Value *scale) {
  unsigned srcRows = t.role == TileRole::KeyT ? t.cols : t.rows;
  unsigned srcCols = t.role == TileRole::KeyT ? t.rows : t.cols;
  Type *elem = elementType(b.getContext(), src.dtype);
  target.barrier(b);
  forEachShared(srcRows * srcCols, "load", [&](Value *e) {
    Value *r = b.CreateUDiv(e, b.getInt32(srcCols)),
          *c = b.CreateURem(e, b.getInt32(srcCols));
    Value *slot =
        t.role == TileRole::KeyT ? sharedIndex(t, c, r) : sharedIndex(t, r, c);
    emitIfElse(
        b, b.CreateICmpSLT(r, valid), "row",
        [&] {
          Value *rowPtr = src.rowPointer(b, b.CreateZExt(r, b.getInt64Ty()));
          Value *x = b.CreateLoad(
              elem, b.CreateInBoundsGEP(elem, rowPtr,
                                        b.CreateZExt(c, b.getInt64Ty())));
          if (!elem->isFloatTy())
            x = b.CreateFPExt(x, b.getFloatTy());
          if (scale)
            x = b.CreateFMul(x, scale);
          b.CreateStore(x, at(t.storage, slot));
        },
        [&] { b.CreateStore(f32(0), at(t.storage, slot)); });
  });
  target.barrier(b);
}

void GpuSimtTileOps::mma(Tile &acc, const Tile &a, const Tile &bt) {
  ThreadGrid g = threadGrid(acc.rows, acc.cols, threads);
  bool inRegisters = acc.role == TileRole::Output;
  emitIf(b, b.CreateICmpULT(tid, b.getInt32(g.tx * g.ty)), "mma", [&] {
    Value *row0 =
        b.CreateMul(b.CreateUDiv(tid, b.getInt32(g.tx)), b.getInt32(g.rb));
    Value *col0 = b.CreateURem(tid, b.getInt32(g.tx));
    auto row = [&](unsigned i) { return b.CreateAdd(row0, b.getInt32(i)); };
    auto col = [&](unsigned j) {
      return b.CreateAdd(col0, b.getInt32(j * g.tx));
    };
    auto slot = [&](unsigned i, unsigned j) {
      return inRegisters ? at(acc.storage, b.getInt32(i * g.cb + j))
                         : at(acc.storage, sharedIndex(acc, row(i), col(j)));
    };
    SmallVector<Value *, 64> init;
    for (unsigned i = 0; i < g.rb; ++i)
      for (unsigned j = 0; j < g.cb; ++j)
        init.push_back(b.CreateLoad(b.getFloatTy(), slot(i, j)));
    auto sums = emitForCarried(
        b, b.getInt32(0), b.getInt32(a.cols), b.getInt32(1), "mma.k", init,
        [&](Value *k, ArrayRef<Value *> cur) {
          SmallVector<Value *, 16> as, bs;
          for (unsigned i = 0; i < g.rb; ++i)
            as.push_back(b.CreateLoad(
                b.getFloatTy(), at(a.storage, sharedIndex(a, row(i), k))));
          for (unsigned j = 0; j < g.cb; ++j)
            bs.push_back(b.CreateLoad(
                b.getFloatTy(), at(bt.storage, sharedIndex(bt, k, col(j)))));
          SmallVector<Value *, 16> next;
          for (unsigned i = 0; i < g.rb; ++i)
            for (unsigned j = 0; j < g.cb; ++j)
              next.push_back(
                  b.CreateIntrinsic(Intrinsic::fmuladd, {b.getFloatTy()},
                                    {as[i], bs[j], cur[i * g.cb + j]}));
          return SmallVector<Value *, 16>(next.begin(), next.end());
        });
    for (unsigned i = 0; i < g.rb; ++i)
      for (unsigned j = 0; j < g.cb; ++j)
        b.CreateStore(sums[i * g.cb + j], slot(i, j));
  });
  if (!inRegisters)
    target.barrier(b);
}

void GpuSimtTileOps::map(Tile &t, ElementFn fn) {
  if (t.role == TileRole::Output) {
    ThreadGrid g = threadGrid(t.rows, t.cols, threads);
    forEachOwned(t, [&](unsigned i, unsigned j, Value *r, Value *c) {
      Value *p = at(t.storage, b.getInt32(i * g.cb + j));
      b.CreateStore(fn(b, r, c, b.CreateLoad(b.getFloatTy(), p)), p);
    });
    return;
  }
  forEachShared(t.rows * t.cols, "map", [&](Value *e) {
    Value *r = b.CreateUDiv(e, b.getInt32(t.cols)),
          *c = b.CreateURem(e, b.getInt32(t.cols));
    Value *p = at(t.storage, sharedIndex(t, r, c));
    b.CreateStore(fn(b, r, c, b.CreateLoad(b.getFloatTy(), p)), p);
  });
  target.barrier(b);
}

void GpuSimtTileOps::mapWithRow(Tile &t, const RowVec &row, WithRowFn fn) {
  map(t, [&](IRBuilderBase &b, Value *r, Value *, Value *x) {
    return fn(b, x, b.CreateLoad(b.getFloatTy(), at(row.storage, r)));
  });
}

void GpuSimtTileOps::reduceRows(const Tile &t, RowVec &out, bool isMax) {
  forEachShared(t.rows, isMax ? "rowmax" : "rowsum", [&](Value *r) {
    auto result = emitForCarried(
        b, b.getInt32(0), b.getInt32(t.cols), b.getInt32(1), "cols",
        {f32(isMax ? -INFINITY : 0.0f)}, [&](Value *c, ArrayRef<Value *> cur) {
          Value *x =
              b.CreateLoad(b.getFloatTy(), at(t.storage, sharedIndex(t, r, c)));
          return SmallVector<Value *, 16>{isMax ? b.CreateMaxNum(cur[0], x)
                                                : b.CreateFAdd(cur[0], x)};
        });
    b.CreateStore(result[0], at(out.storage, r));
  });
  target.barrier(b);
}

void GpuSimtTileOps::mapRows(RowVec &out, ArrayRef<const RowVec *> in,
                             RowFn fn) {
  forEachShared(out.rows, "maprows", [&](Value *r) {
    SmallVector<Value *, 4> values;
    for (const RowVec *v : in)
      values.push_back(b.CreateLoad(b.getFloatTy(), at(v->storage, r)));
    b.CreateStore(fn(b, values), at(out.storage, r));
  });
  target.barrier(b);
}

void GpuSimtTileOps::store(const Tile &t, const GlobalRows &dst, Value *valid) {
  assert(t.role == TileRole::Output && "simt stores the output accumulator");
  ThreadGrid g = threadGrid(t.rows, t.cols, threads);
  Type *elem = elementType(b.getContext(), dst.dtype);
  forEachOwned(t, [&](unsigned i, unsigned j, Value *r, Value *c) {
    emitIf(b, b.CreateICmpSLT(r, valid), "store", [&] {
      Value *x =
          b.CreateLoad(b.getFloatTy(), at(t.storage, b.getInt32(i * g.cb + j)));
      if (!elem->isFloatTy())
        x = b.CreateFPTrunc(x, elem);
      Value *rowPtr = dst.rowPointer(b, b.CreateZExt(r, b.getInt64Ty()));
      b.CreateStore(x, b.CreateInBoundsGEP(elem, rowPtr,
                                           b.CreateZExt(c, b.getInt64Ty())));
    });
  });
}

void GpuSimtTileOps::store(const RowVec &r, const GlobalRows &dst,
                           Value *valid) {
  emitFor(b, tid, valid, b.getInt32(threads), "store.rows", [&](Value *i) {
    b.CreateStore(b.CreateLoad(b.getFloatTy(), at(r.storage, i)),
                  dst.rowPointer(b, b.CreateZExt(i, b.getInt64Ty())));
  });
}

std::unique_ptr<TileOps> fmhajit::createGpuSimtTileOps(IRBuilderBase &b,
                                                       GpuTargetInfo &target) {
  return std::make_unique<GpuSimtTileOps>(b, target);
}
