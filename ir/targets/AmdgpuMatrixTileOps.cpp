//===- AmdgpuMatrixTileOps.cpp - Tiles on AMD matrix instructions ---------===//
//
// The shared core of pipeline=mfma and pipeline=wmma (the header says why
// the products are transposed). Per wave, with nt = bm / (warps * m) query
// tiles of m queries each, starting at query q0 = wave * nt * m:
//  - Scores (S^T) and Output (O^T) are fp32 accumulators in registers: for
//    each block i of m keys (S) or m dv columns (O) and query tile j,
//    accPerLane floats; element r is (query q0 + j*m + l%m,
//    column i*m + accRow(h, r)).
//  - Row vectors hold one float per query tile, the lane's query, in both
//    lane groups; row reductions end with one ds_bpermute (lane ^ m).
//  - K rows [bn][d+8] and V^T rows [dv][bn+8] are dtype bits in LDS, rows
//    padded by 16 bytes (bank spread, 16-byte alignment); Q is either B
//    operands in registers (mfma) or rows [bm][d+8] in LDS (wmma).
//    AmdgpuMatrixLayout (specs/pipelines) places them and counts the query
//    tiles, for validation and for this file.
//  - Loads copy 16 bytes a thread (K and Q rows) or two keys' 8 columns (V,
//    written transposed as key pairs), zeros past `valid`. A load starts
//    with a barrier (readers of the old tile are done) unless it directly
//    follows another load; the first product after loads starts with one
//    (the copies are visible).
//  - Q's softmax scale is kept aside and applied to S in fp32.
//
// S^T += K Q^T, for each k-step s < d/k:
//   qB[j] = Q operand (j, s)
//   for i < bn/m:  a = LDS K[i*m + l%m][s*k + k0(h) ..]
//                  for j: acc[i][j] = instr.multiply(a, qB[j], acc[i][j])
// O^T += V^T P^T, for each key block ki < bn/m and step s < m/k:
//   pB[j] = instr.accumulatorOperand(S[ki][j] as dtype bits, s)
//   for i < dv/m:  a = instr.transposedOperand(&V^T[i*m + l%m][ki*m], s)
//                  for j: acc[i][j] = instr.multiply(a, pB[j], acc[i][j])
// A dv that is not a multiple of m (80 on mfma) computes its last block
// from clamped rows and never stores the columns past dv.
//
//===----------------------------------------------------------------------===//
#include "ir/targets/AmdgpuMatrixTileOps.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "specs/ArchTable.h"
#include "specs/pipelines/AmdgpuMatrixLayout.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"
#include "llvm/Support/MathExtras.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;

AmdgpuMatrixInstr::~AmdgpuMatrixInstr() = default;

Value *fmhajit::amdgpuShuffleXor(IRBuilderBase &b, Value *v, Value *lane,
                                 unsigned mask) {
  Type *type = v->getType();
  Value *address = b.CreateShl(b.CreateXor(lane, b.getInt32(mask)), 2); // bytes
  Value *bits =
      b.CreateIntrinsic(Intrinsic::amdgcn_ds_bpermute, {},
                        {address, b.CreateBitCast(v, b.getInt32Ty())});
  return b.CreateBitCast(bits, type);
}

Value *fmhajit::loadI16s(IRBuilderBase &b, Value *p, unsigned count) {
  return b.CreateAlignedLoad(FixedVectorType::get(b.getInt16Ty(), count), p,
                             Align(std::min(16u, 2 * count)));
}

// Consecutive loads share one barrier: nothing read LDS since the first.
void AmdgpuMatrixTileOps::beginSharedLoad() {
  BasicBlock *here = b.GetInsertBlock();
  if (here != loadEndBlock || here->size() != loadEndSize) {
    target.barrier(b);
    copiesPending = false;
  }
}

void AmdgpuMatrixTileOps::load(Tile &t, const GlobalRows &src, Value *valid,
                               Value *scale) {
  if (t.role == TileRole::Query && scale)
    queryScale[t.storage] = scale;
  if (t.role == TileRole::Query && !layout.queryInShared) {
    loadQueryFragments(t, src, valid);
    return;
  }
  beginSharedLoad();
  if (t.role == TileRole::Value)
    copyTransposed(t.storage, t.rows, t.cols, src, valid);
  else if (t.role == TileRole::KeyT)
    copyRows(t.storage, t.cols, t.rows, src, valid);
  else
    copyRows(t.storage, t.rows, t.cols, src, valid);
  endSharedLoad();
}

void AmdgpuMatrixTileOps::endSharedLoad() {
  copiesPending = true;
  loadEndBlock = b.GetInsertBlock();
  loadEndSize = loadEndBlock->size();
}

// Each lane loads its B operands straight from global memory, once per
// work item: query row q0 + j*m + l%m, columns s*k + k0(h) onwards.
void AmdgpuMatrixTileOps::loadQueryFragments(Tile &t, const GlobalRows &src,
                                             Value *valid) {
  unsigned steps = t.cols / instr->k;
  auto *vector = FixedVectorType::get(elem, instr->kPerLane);
  Value *k0 = instr->operandK0(b, h);
  for (unsigned j = 0; j < nTiles; ++j) {
    Value *row = queryRow(j);
    Value *inside = b.CreateICmpSLT(row, valid);
    Value *rowPtr = src.rowPointerOrFirst(b, row, inside);
    for (unsigned s = 0; s < steps; ++s) {
      Value *c = b.CreateZExt(b.CreateAdd(b.getInt32(s * instr->k), k0),
                              b.getInt64Ty());
      Value *p = b.CreateInBoundsGEP(elem, rowPtr, c);
      Value *bits = b.CreateBitCast(
          b.CreateAlignedLoad(vector, p,
                              Align(std::min(16u, 2 * instr->kPerLane))),
          operandType());
      b.CreateStore(
          b.CreateSelect(inside, bits, Constant::getNullValue(operandType())),
          slot(t.storage, j * steps + s));
    }
  }
}

// Eight elements of source row \p row from column \p c, zeros past valid.
Value *AmdgpuMatrixTileOps::loadChunk(const GlobalRows &src, Value *row,
                                      Value *c, Value *valid) {
  auto *chunk = FixedVectorType::get(b.getInt16Ty(), 8);
  Value *inside = b.CreateICmpSLT(row, valid);
  Value *rowPtr = src.rowPointerOrFirst(b, row, inside);
  Value *p = b.CreateInBoundsGEP(elem, rowPtr, b.CreateZExt(c, b.getInt64Ty()));
  Value *x = b.CreateAlignedLoad(chunk, p, Align(16));
  return b.CreateSelect(inside, x, Constant::getNullValue(chunk));
}

// Rows of K (or Q) into [rows][width + 8]; thread t copies chunks t,
// t + threads, ..., each 16 bytes of one row.
void AmdgpuMatrixTileOps::copyRows(Value *dst, unsigned rows, unsigned width,
                                   const GlobalRows &src, Value *valid) {
  unsigned chunks = width / 8, pitch = pitchOf(dst);
  emitFor(b, target.threadId(b), b.getInt32(rows * chunks),
          b.getInt32(target.numThreads()), "copy", [&](Value *i) {
            Value *row = b.CreateUDiv(i, b.getInt32(chunks));
            Value *c =
                b.CreateMul(b.CreateURem(i, b.getInt32(chunks)), b.getInt32(8));
            Value *index = b.CreateAdd(b.CreateMul(row, b.getInt32(pitch)), c);
            b.CreateAlignedStore(
                loadChunk(src, row, c, valid),
                b.CreateInBoundsGEP(b.getInt16Ty(), dst, index), Align(16));
          });
}

// V rows into V^T [dv][keys + 8]. Thread t takes key pairs first, so that
// the lanes of a wave write consecutive words of each V^T row.
void AmdgpuMatrixTileOps::copyTransposed(Value *dst, unsigned keys,
                                         unsigned width, const GlobalRows &src,
                                         Value *valid) {
  unsigned pairs = keys / 2, pitch = pitchOf(dst);
  emitFor(
      b, target.threadId(b), b.getInt32(pairs * (width / 8)),
      b.getInt32(target.numThreads()), "copy.t", [&](Value *i) {
        Value *key = b.CreateShl(b.CreateURem(i, b.getInt32(pairs)), 1);
        Value *c =
            b.CreateMul(b.CreateUDiv(i, b.getInt32(pairs)), b.getInt32(8));
        Value *first = loadChunk(src, key, c, valid);
        Value *second =
            loadChunk(src, b.CreateAdd(key, b.getInt32(1)), c, valid);
        for (unsigned e = 0; e < 8; ++e) {
          Value *pair = b.CreateShuffleVector(
              first, second, ArrayRef<int>{int(e), int(8 + e)});
          Value *row = b.CreateAdd(c, b.getInt32(e));
          Value *index = b.CreateAdd(b.CreateMul(row, b.getInt32(pitch)), key);
          b.CreateAlignedStore(
              pair, b.CreateInBoundsGEP(b.getInt16Ty(), dst, index), Align(4));
        }
      });
}

void AmdgpuMatrixTileOps::mma(Tile &acc, const Tile &a, const Tile &bt) {
  if (copiesPending) {
    target.barrier(b);
    copiesPending = false;
  }
  if (acc.role == TileRole::Scores)
    scoresProduct(acc, a, bt);
  else
    outputProduct(acc, a, bt);
}

void AmdgpuMatrixTileOps::scoresProduct(Tile &acc, const Tile &q,
                                        const Tile &kT) {
  unsigned keyBlocks = kT.cols / m, steps = q.cols / instr->k;
  auto *accType = FixedVectorType::get(b.getFloatTy(), instr->accPerLane);
  SmallVector<Value *, 32> sums(keyBlocks * nTiles,
                                Constant::getNullValue(accType));
  for (unsigned s = 0; s < steps; ++s) {
    SmallVector<Value *, 8> qB;
    for (unsigned j = 0; j < nTiles; ++j)
      qB.push_back(queryOperand(q, j, s));
    for (unsigned i = 0; i < keyBlocks; ++i) {
      Value *key = b.CreateAdd(b.getInt32(i * m), col);
      Value *a = sharedOperand(kT.storage, pitchOf(kT.storage), key, s);
      for (unsigned j = 0; j < nTiles; ++j)
        sums[i * nTiles + j] =
            instr->multiply(b, a, qB[j], sums[i * nTiles + j]);
    }
  }
  Value *scale = queryScale.lookup(q.storage);
  forEachAcc(acc.cols, [&](unsigned i, unsigned j,
                           unsigned r) { // acc += scale * KQ^T
    Value *p = slot(acc.storage, accIndex(i, j, r));
    Value *old = b.CreateLoad(b.getFloatTy(), p);
    Value *v = b.CreateExtractElement(sums[i * nTiles + j], uint64_t(r));
    b.CreateStore(scale ? b.CreateIntrinsic(Intrinsic::fmuladd,
                                            {b.getFloatTy()}, {v, scale, old})
                        : b.CreateFAdd(v, old),
                  p);
  });
}

void AmdgpuMatrixTileOps::outputProduct(Tile &acc, const Tile &p,
                                        const Tile &v) {
  unsigned keyBlocks = p.cols / m, steps = m / instr->k,
           dvBlocks = blocks(acc.cols);
  unsigned pitch = pitchOf(v.storage);
  auto *accType = FixedVectorType::get(b.getFloatTy(), instr->accPerLane);
  SmallVector<Value *, 64> sums(dvBlocks * nTiles, PoisonValue::get(accType));
  forEachAcc(acc.cols, [&](unsigned i, unsigned j, unsigned r) {
    Value *x =
        b.CreateLoad(b.getFloatTy(), slot(acc.storage, accIndex(i, j, r)));
    sums[i * nTiles + j] =
        b.CreateInsertElement(sums[i * nTiles + j], x, uint64_t(r));
  });
  SmallVector<Value *, 8>
      vRows; // clamped: a partial last block repeats row dv - 1
  for (unsigned i = 0; i < dvBlocks; ++i) {
    Value *row = b.CreateAdd(b.getInt32(i * m), col);
    if ((i + 1) * m > acc.cols)
      row = b.CreateBinaryIntrinsic(Intrinsic::umin, row,
                                    b.getInt32(acc.cols - 1));
    vRows.push_back(b.CreateMul(row, b.getInt32(pitch)));
  }
  for (unsigned ki = 0; ki < keyBlocks; ++ki) {
    SmallVector<SmallVector<Value *, 16>, 8> bits(nTiles);
    for (unsigned j = 0; j < nTiles; ++j)
      for (unsigned r = 0; r < instr->accPerLane; ++r) {
        Value *x =
            b.CreateLoad(b.getFloatTy(), slot(p.storage, accIndex(ki, j, r)));
        bits[j].push_back(toBits(x));
      }
    for (unsigned s = 0; s < steps; ++s) {
      SmallVector<Value *, 8> pB;
      for (unsigned j = 0; j < nTiles; ++j)
        pB.push_back(instr->accumulatorOperand(b, bits[j], s, lane, h));
      for (unsigned i = 0; i < dvBlocks; ++i) {
        Value *index = b.CreateAdd(vRows[i], b.getInt32(ki * m));
        Value *row = b.CreateInBoundsGEP(b.getInt16Ty(), v.storage, index);
        Value *a = instr->transposedOperand(b, row, s, h);
        for (unsigned j = 0; j < nTiles; ++j)
          sums[i * nTiles + j] =
              instr->multiply(b, a, pB[j], sums[i * nTiles + j]);
      }
    }
  }
  forEachAcc(acc.cols, [&](unsigned i, unsigned j, unsigned r) {
    b.CreateStore(b.CreateExtractElement(sums[i * nTiles + j], uint64_t(r)),
                  slot(acc.storage, accIndex(i, j, r)));
  });
}

void AmdgpuMatrixTileOps::map(Tile &t, ElementFn fn) {
  forEachAcc(t.cols, [&](unsigned i, unsigned j, unsigned r) {
    Value *p = slot(t.storage, accIndex(i, j, r));
    b.CreateStore(
        fn(b, queryRow(j), accColumn(i, r), b.CreateLoad(b.getFloatTy(), p)),
        p);
  });
}

void AmdgpuMatrixTileOps::mapWithRow(Tile &t, const RowVec &row, WithRowFn fn) {
  SmallVector<Value *, 8> values;
  for (unsigned j = 0; j < nTiles; ++j)
    values.push_back(b.CreateLoad(b.getFloatTy(), slot(row.storage, j)));
  forEachAcc(t.cols, [&](unsigned i, unsigned j, unsigned r) {
    Value *p = slot(t.storage, accIndex(i, j, r));
    b.CreateStore(fn(b, b.CreateLoad(b.getFloatTy(), p), values[j]), p);
  });
}

// A query's keys are spread over its lane's registers and the other lane
// group's: reduce the registers, then exchange with lane ^ m.
void AmdgpuMatrixTileOps::reduceRows(const Tile &t, RowVec &out, bool isMax) {
  auto combine = [&](Value *x, Value *y) {
    return isMax ? b.CreateMaxNum(x, y) : b.CreateFAdd(x, y);
  };
  for (unsigned j = 0; j < nTiles; ++j) {
    Value *v = f32(isMax ? -INFINITY : 0.0f);
    for (unsigned i = 0; i < blocks(t.cols); ++i)
      for (unsigned r = 0; r < instr->accPerLane; ++r)
        v = combine(v, b.CreateLoad(b.getFloatTy(),
                                    slot(t.storage, accIndex(i, j, r))));
    v = combine(v, amdgpuShuffleXor(b, v, lane, m));
    b.CreateStore(v, slot(out.storage, j));
  }
}

void AmdgpuMatrixTileOps::mapRows(RowVec &out, ArrayRef<const RowVec *> in,
                                  RowFn fn) {
  for (unsigned j = 0; j < nTiles; ++j) {
    SmallVector<Value *, 4> values;
    for (const RowVec *r : in)
      values.push_back(b.CreateLoad(b.getFloatTy(), slot(r->storage, j)));
    b.CreateStore(fn(b, values), slot(out.storage, j));
  }
}

void AmdgpuMatrixTileOps::store(const Tile &t, const GlobalRows &dst,
                                Value *valid) {
  assert(t.role == TileRole::Output && "only the output accumulator is stored");
  Type *outElem = elementType(b.getContext(), dst.dtype);
  for (unsigned j = 0; j < nTiles; ++j) {
    Value *row = queryRow(j);
    emitIf(b, b.CreateICmpSLT(row, valid), "store", [&] {
      Value *rowPtr = dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty()));
      for (unsigned i = 0; i < blocks(t.cols); ++i)
        for (unsigned r = 0; r < instr->accPerLane; ++r) {
          Value *c = accColumn(i, r);
          auto put = [&] {
            Value *x = b.CreateLoad(b.getFloatTy(),
                                    slot(t.storage, accIndex(i, j, r)));
            if (!outElem->isFloatTy())
              x = b.CreateFPTrunc(x, outElem);
            b.CreateStore(x,
                          b.CreateInBoundsGEP(outElem, rowPtr,
                                              b.CreateZExt(c, b.getInt64Ty())));
          };
          if ((i + 1) * m > t.cols) // the clamped columns past dv
            emitIf(b, b.CreateICmpULT(c, b.getInt32(t.cols)), "store.col", put);
          else
            put();
        }
    });
  }
}

void AmdgpuMatrixTileOps::store(const RowVec &r, const GlobalRows &dst,
                                Value *valid) {
  for (unsigned j = 0; j < nTiles; ++j) {
    Value *row = queryRow(j);
    Value *mine = b.CreateAnd(b.CreateICmpEQ(h, b.getInt32(0)),
                              b.CreateICmpSLT(row, valid));
    emitIf(b, mine, "store.row", [&] {
      b.CreateStore(b.CreateLoad(b.getFloatTy(), slot(r.storage, j)),
                    dst.rowPointer(b, b.CreateZExt(row, b.getInt64Ty())));
    });
  }
}

std::unique_ptr<TileOps>
fmhajit::createAmdgpuMatrixTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                                   std::unique_ptr<AmdgpuMatrixInstr> instr) {
  unsigned bytes = AmdgpuMatrixLayout(target.kernelSpec(),
                                      *findArch(target.kernelSpec().target))
                       .bytes();
  return std::make_unique<AmdgpuMatrixTileOps>(b, target, std::move(instr),
                                               bytes);
}
