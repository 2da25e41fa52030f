//===- HostTileLoads.cpp - Host tiles and row vectors from global rows ----===//
//
// The host's loads (HostTileOpsImpl.h): a tile's source rows become its
// buffer's rows (Value, KeyT) or, for a Query tile stored transposed, its
// columns; rows at or past the valid ones are zero. Elements become fp32
// times the load's scale (on AMX, a Query tile's scale is left pending for
// its products: HostTileOpsAmx.cpp). A row vector takes one float a row, and
// a fill value past the valid rows.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/targets/HostTileOpsImpl.h"
#include "ir/targets/HostTranspose.h"
#include "llvm/IR/Intrinsics.h"

using namespace fmhajit;
using namespace llvm;

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
  if (packsAtLoad && !scale && src.dtype == DType::BF16 &&
      (t.role == TileRole::KeyT || t.role == TileRole::Value))
    return loadIntoPack(t, src, valid);
  loadEachRow(t, src, valid, scale);
}

void HostTileOps::loadEachRow(const Tile &t, const GlobalRows &src,
                              Value *valid, Value *scale) {
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

// One prefetch a 64-byte line of each row: the host copies a tile's rows the
// moment it loads it, so without this every copy waited on memory. On the GPU
// machine's Sapphire Rapids (AMX, K and V packed at load) it took host decode
// and prefill to about 0.96x their time over five in-turns comparisons; on
// the FMA path of a 2-core Zen 4, whose key steps are bound by their FMAs, it
// measured within noise (docs/design.md, "bf16 on AMX tiles").
void HostTileOps::warmRows(const GlobalRows &src, Value *valid, unsigned cols) {
  constexpr unsigned kLineBytes = 64;
  unsigned rowBytes = cols * dtypeBytes(src.dtype);
  Value *rows = b.CreateSExt(valid, b.getInt64Ty());
  emitFor(b, b.getInt64(0), rows, b.getInt64(1), "warm", [&](Value *r) {
    Value *row = src.rowPointer(b, r);
    for (unsigned offset = 0; offset < rowBytes; offset += kLineBytes)
      b.CreateIntrinsic(
          Intrinsic::prefetch, {row->getType()},
          {b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), row, offset),
           b.getInt32(0), b.getInt32(3), b.getInt32(1)});
  });
}
