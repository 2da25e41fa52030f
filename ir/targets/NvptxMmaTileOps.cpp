//===- NvptxMmaTileOps.cpp - Tensor-core tiles: mma.sync m16n8k16 ---------===//
//
// pipeline=mma on sm_80+ (FlashAttention-2's data flow), on the register
// tiles and cp.async copies of NvptxFragmentTileOps:
//  - Each warp owns bm / warps query rows, 16 per m-tile (at most
//    MmaLayout::kMaxQueryTilesPerWarp of them: validation checks the layout
//    in specs/pipelines/MmaLayout.h, which also places the shared tiles).
//  - Query, KeyT and Value tiles are rows in shared memory, each row padded
//    by 16 bytes so the eight rows ldmatrix reads fall in distinct banks.
//    With two m-tiles per warp, Q fragments come from shared memory each
//    step (registers would spill at d=128) and K/V fragments feed both.
//  - S = Q K^T:  A fragments of Q by ldmatrix.x4, B fragments of K^T by
//                ldmatrix.x4 (K rows are K^T columns)
//    O += P V:   A fragments of P converted in registers from S's
//                accumulators (the layouts line up), B by ldmatrix.x4.trans
//
//===----------------------------------------------------------------------===//
#include "ir/targets/NvptxMmaTileOps.h"
#include "ir/Loops.h"
#include "specs/ArchTable.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

void NvptxMmaTileOps::mmaStep(Value *const a[4], Value *b0, Value *b1,
                              Value *const c[4], Value *out[4]) {
  SmallVector<Value *, 10> args;
  bool half = spec.dtype == DType::F16;
  auto *halfPair = FixedVectorType::get(b.getHalfTy(), 2);
  auto operand = [&](Value *bits) {
    return half ? b.CreateBitCast(bits, halfPair) : bits;
  };
  for (unsigned i = 0; i < 4; ++i)
    args.push_back(operand(a[i]));
  args.push_back(operand(b0));
  args.push_back(operand(b1));
  for (unsigned i = 0; i < 4; ++i)
    args.push_back(c[i]);
  Value *d =
      b.CreateIntrinsic(half ? Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32
                             : Intrinsic::nvvm_mma_m16n8k16_row_col_bf16,
                        {}, args);
  for (unsigned i = 0; i < 4; ++i)
    out[i] = b.CreateExtractValue(d, i);
}

// Every fragment of a tile is one lane-dependent address plus a constant.
// Computed once, LICM would hoist each of the dozens of sums out of the
// loop, and each would hold a register for the whole loop (ptxas spilled at
// d=128). An opaque copy made where the tile is read keeps one base live
// instead, and the constants fold into ldmatrix's [reg+imm] addressing.
Value *NvptxMmaTileOps::fragmentBase(const Tile &tile, Value *key, Value *col) {
  Value *address = chunkAddress(tile, key, col);
  unsigned bits = b.GetInsertBlock()->getDataLayout().getPointerSizeInBits(3);
  Type *ptrTy = address->getType();
  auto *copy =
      InlineAsm::get(FunctionType::get(ptrTy, {ptrTy}, false),
                     bits == 32 ? "mov.b32 $0, $1;" : "mov.b64 $0, $1;",
                     bits == 32 ? "=r,r" : "=l,l", /*hasSideEffects=*/true);
  return b.CreateCall(copy, {address});
}

void NvptxMmaTileOps::ldmatrix(Value *address, bool transposed, Value *out[4]) {
  Value *frags = b.CreateIntrinsic(
      transposed ? Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                 : Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16,
      {PointerType::get(b.getContext(), 3)}, {address});
  for (unsigned r = 0; r < 4; ++r)
    out[r] = b.CreateExtractValue(frags, r);
}

// Q's A fragments (16 x 16 at the rows of m-tile i, the columns of step kk):
// matrix m of ldmatrix.x4 covers rows (m & 1) * 8 and columns (m >> 1) * 8,
// so lane l names row l & 15 and column (l >> 4) * 8 (\p base, at i = kk = 0).
SmallVector<Value *, 4> NvptxMmaTileOps::queryFragments(const Tile &q,
                                                        Value *base, unsigned i,
                                                        unsigned kk) {
  Value *out[4];
  ldmatrix(fragmentAt(q, base, i * 16, kk * 16), /*transposed=*/false, out);
  return {out[0], out[1], out[2], out[3]};
}

void NvptxMmaTileOps::mma(Tile &acc, const Tile &a, const Tile &bt) {
  waitFor(a);
  waitFor(bt);
  markRead(bt);
  if (acc.role == TileRole::Scores)
    markRead(a);
  bool scores = acc.role == TileRole::Scores; // S = Q K^T, else O += P V
  unsigned kSteps = a.cols / 16, nPairs = acc.cols / 16;
  SmallVector<Value *, 128> sums(accCount(acc));
  for (unsigned e = 0; e < sums.size(); ++e)
    sums[e] =
        scores ? f32(0) : b.CreateLoad(b.getFloatTy(), slot(acc.storage, e));
  Value *queryBase = nullptr;
  if (scores) {
    Value *row = b.CreateAdd(warpRow0, b.CreateAnd(lane, b.getInt32(15)));
    queryBase =
        fragmentBase(a, row, b.CreateShl(b.CreateLShr(lane, b.getInt32(4)), 3));
  }
  // B fragments, 16 keys x 16 columns per ldmatrix.x4: lane l names key
  // (l & 7) + 8 * ((l >> 4) for K, (l >> 3) & 1 for V) and column 8 times
  // the other bit.
  Value *sub8 = b.CreateAnd(lane, b.getInt32(7));
  Value *which = b.CreateShl(
      b.CreateAnd(b.CreateLShr(lane, b.getInt32(3)), b.getInt32(1)), 3);
  Value *upper = b.CreateShl(b.CreateLShr(lane, b.getInt32(4)), 3);
  Value *keyBase = scores ? fragmentBase(bt, b.CreateAdd(upper, sub8),
                                         which) // K rows: key n, col k
                          : fragmentBase(bt, b.CreateAdd(which, sub8),
                                         upper); // V rows: key k, col n
  for (unsigned kk = 0; kk < kSteps; ++kk) {
    SmallVector<Value *, 4> aFrag[MmaLayout::kMaxQueryTilesPerWarp];
    for (unsigned i = 0; i < mTiles; ++i)
      aFrag[i] = scores ? queryFragments(a, queryBase, i, kk)
                        : probabilityFragments(a, i, kk);
    for (unsigned np = 0; np < nPairs; ++np) {
      Value *bReg[4];
      ldmatrix(scores ? fragmentAt(bt, keyBase, np * 16, kk * 16)
                      : fragmentAt(bt, keyBase, kk * 16, np * 16),
               /*transposed=*/!scores, bReg);
      for (unsigned i = 0; i < mTiles; ++i)
        for (unsigned half = 0; half < 2; ++half) {
          unsigned j = 2 * np + half;
          Value *c[4], *out[4];
          for (unsigned e = 0; e < 4; ++e)
            c[e] = sums[accIndex(acc, i, j, e)];
          mmaStep(aFrag[i].data(), bReg[2 * half], bReg[2 * half + 1], c, out);
          for (unsigned e = 0; e < 4; ++e)
            sums[accIndex(acc, i, j, e)] = out[e];
        }
    }
  }
  Value *scale = scores ? deferredScale(a) : nullptr;
  for (unsigned e = 0; e < sums.size(); ++e) {
    Value *v = sums[e];
    if (scores) { // acc += scale * (Q K^T)
      Value *old = b.CreateLoad(b.getFloatTy(), slot(acc.storage, e));
      v = scale ? b.CreateIntrinsic(Intrinsic::fmuladd, {b.getFloatTy()},
                                    {v, scale, old})
                : b.CreateFAdd(v, old);
    }
    b.CreateStore(v, slot(acc.storage, e));
  }
}

std::unique_ptr<TileOps> fmhajit::createNvptxMmaTileOps(IRBuilderBase &b,
                                                        GpuTargetInfo &target) {
  const KernelSpec &spec = target.kernelSpec();
  return std::make_unique<NvptxMmaTileOps>(
      b, target, MmaLayout(spec, *findArch(spec.target)));
}
