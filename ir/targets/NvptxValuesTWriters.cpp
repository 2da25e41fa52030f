//===- NvptxValuesTWriters.cpp - fp8's V^T written by the kernel itself ---===//
#include "ir/targets/NvptxValuesTWriters.h"
#include "ir/KernelAbi.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxFp8Transpose.h"
#include "ir/targets/NvptxTma.h"
#include "ir/targets/NvptxWgmma.h"
#include "specs/ArchTable.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

/// V^T's keys a row (i64): \p seqlenK (i32) rounded up as pretransposedKeys
/// rounds it.
static Value *paddedKeys(IRBuilderBase &b, Value *seqlenK) {
  Value *keys = b.CreateSExt(seqlenK, b.getInt64Ty());
  return b.CreateMul(
      b.CreateUDiv(b.CreateAdd(keys, b.getInt64(kPretransposeKeys - 1)),
                   b.getInt64(kPretransposeKeys)),
      b.getInt64(kPretransposeKeys));
}

ValuesTFlags ValuesTFlags::read(IRBuilderBase &b, const KernelSpec &spec,
                                Value *params) {
  ArgsReader p(b, params);
  Value *seqlenK = p.get(kSeqlenK, "seqlenK");
  auto wide = [&](Value *v) { return b.CreateSExt(v, b.getInt64Ty()); };
  Value *keys = paddedKeys(b, seqlenK);
  Value *pairs = b.CreateMul(wide(p.get(kBatch, "batch")),
                             wide(p.get(kHeadsKv, "headsKv")));
  Value *valuesTBytes = b.CreateMul(
      b.CreateMul(pairs, b.getInt64(spec.headDimV())), keys, "vt.bytes");
  Value *flags = b.CreateInBoundsGEP(b.getInt8Ty(), p.get(kValuesT, "valuesT"),
                                     valuesTBytes, "vt.flags");
  Value *tiles = b.CreateUDiv(b.CreateAdd(seqlenK, b.getInt32(spec.bn - 1)),
                              b.getInt32(spec.bn), "vt.tiles");
  return {flags, tiles};
}

Value *ValuesTFlags::flag(IRBuilderBase &b, Value *pair, Value *tile) const {
  Value *index = b.CreateAdd(b.CreateMul(pair, tilesPerPair), tile);
  return b.CreateInBoundsGEP(b.getInt32Ty(), flags,
                             b.CreateZExt(index, b.getInt64Ty()));
}

namespace {
class WritersEmitter {
public:
  WritersEmitter(IRBuilderBase &b, GpuTargetInfo &target, Value *params)
      : b(b), target(target), spec(target.kernelSpec()),
        layout(spec, *findArch(spec.target)), p(b, params),
        dv(spec.headDimV()) {}

  void emit(Value *params);

private:
  Value *c32(unsigned v) { return b.getInt32(v); }
  Value *wide(Value *v) { return b.CreateSExt(v, b.getInt64Ty()); }
  Value *shared(unsigned offset) {
    return b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, offset);
  }
  /// The writers' named barrier (the transposers', unused beside them),
  /// each warp whole again first (loops of uneven trips, a leader's branch).
  void meet() {
    b.CreateIntrinsic(Intrinsic::nvvm_bar_warp_sync, {c32(-1u)});
    b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_sync_aligned_count,
                      {c32(kTransposeBarrier), c32(kTransposerThreads)});
  }
  /// The tile claimed this round: its pair (sequence * headsKv + head),
  /// tile of the pair and first key. Tiles are handed out in groups of the
  /// pairs one round of the grid's items reads (at least one), from the
  /// last group to the first as the blocks walk their items, and within a
  /// group tile by tile across its pairs: every block of the first round
  /// then finds its first tiles among the first claimed.
  struct Claimed {
    Value *pair, *batch, *head, *tile, *key0;
  };
  Claimed claimed(Value *params) {
    Value *taken = b.CreateAlignedLoad(
        b.getInt32Ty(), shared(layout.writerClaimOffset()), Align(4));
    Value *tiles = ValuesTFlags::read(b, spec, params).tilesPerPair;
    Value *headsKv = p.get(kHeadsKv, "headsKv");
    Value *pairs = b.CreateMul(p.get(kBatch, "batch"), headsKv);
    Value *itemsPerPair = p.get(kNumQTiles, "numQTiles");
    if (!spec.pack_gqa)
      itemsPerPair = b.CreateMul(
          itemsPerPair, b.CreateUDiv(p.get(kHeadsQ, "headsQ"), headsKv));
    Value *grid = b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_nctaid_x, {});
    Value *group = b.CreateUDiv(
        b.CreateAdd(grid, b.CreateSub(itemsPerPair, c32(1))), itemsPerPair);
    group = b.CreateBinaryIntrinsic(Intrinsic::umin, group, pairs);
    Value *span = b.CreateMul(group, tiles);
    Value *firstPair = b.CreateMul(b.CreateUDiv(taken, span), group);
    Value *within = b.CreateURem(taken, span);
    Value *size = b.CreateBinaryIntrinsic(Intrinsic::umin, group,
                                          b.CreateSub(pairs, firstPair));
    Value *tile = b.CreateUDiv(within, size);
    Value *fromLast = b.CreateAdd(firstPair, b.CreateURem(within, size));
    Value *pair = b.CreateSub(b.CreateSub(pairs, c32(1)), fromLast);
    return {pair, b.CreateUDiv(pair, headsKv), b.CreateURem(pair, headsKv),
            tile, b.CreateMul(tile, c32(spec.bn))};
  }
  /// Step 2: V rows key0.. of \p headBase into the staging tile.
  void copyRows(Value *headBase, Value *key0, Value *seqlenK);
  /// Step 4: V^T's dv rows of this tile's keys into the workspace.
  void storeRows(Value *rowsBase, Value *keysPadded, Value *key0);

  IRBuilderBase &b;
  GpuTargetInfo &target;
  const KernelSpec &spec;
  WgmmaLayout layout;
  ArgsReader p;
  unsigned dv;
  Value *smem = nullptr, *thread = nullptr;
};
} // namespace

// Row r of the tile, 16 bytes at a time: cp.async.cg of 16 bytes, or of 0
// (zeros) past seqlenK, from a clamped row that stays inside V.
void WritersEmitter::copyRows(Value *headBase, Value *key0, Value *seqlenK) {
  const SharedTile &tile = layout.writerStaged;
  unsigned chunksPerRow = dv / 16, slab = layout.slabBytes(dv);
  Value *rowStride = p.stride(kVStrides, 1, "v.row");
  Value *staged = shared(tile.offset);
  Type *global = PointerType::get(b.getContext(), 1);
  emitFor(
      b, thread, c32(spec.bn * chunksPerRow), c32(kTransposerThreads),
      "vt.copy", [&](Value *index) {
        Value *row = b.CreateUDiv(index, c32(chunksPerRow));
        Value *col = b.CreateShl(b.CreateURem(index, c32(chunksPerRow)), 4);
        Value *key = b.CreateAdd(key0, row);
        Value *inside = b.CreateICmpSLT(key, seqlenK);
        Value *at = b.CreateAdd(
            b.CreateMul(wide(b.CreateSelect(inside, key, c32(0))), rowStride),
            wide(col));
        Value *from = b.CreateAddrSpaceCast(
            b.CreateInBoundsGEP(b.getInt8Ty(), headBase, at), global);
        Value *to = b.CreateInBoundsGEP(
            b.getInt8Ty(), staged,
            swizzledOffset(b, row, col, tile.rows, slab, 1));
        b.CreateIntrinsic(Intrinsic::nvvm_cp_async_cg_shared_global_16_s, {},
                          {to, from, b.CreateSelect(inside, c32(16), c32(0))});
      });
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_commit_group, {});
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {c32(0)});
}

// 16 keys of one V^T row a store; a row's keys past its padded length
// (the last tile's) lie outside the workspace and are not stored.
void WritersEmitter::storeRows(Value *rowsBase, Value *keysPadded,
                               Value *key0) {
  const SharedTile &tile = layout.writerValues;
  unsigned chunksPerRow = spec.bn / 16, slab = layout.slabBytes(spec.bn);
  Value *valuesT = shared(tile.offset);
  auto *word4 = FixedVectorType::get(b.getInt32Ty(), 4);
  Type *global = PointerType::get(b.getContext(), 1);
  emitFor(b, thread, c32(dv * chunksPerRow), c32(kTransposerThreads),
          "vt.store", [&](Value *index) {
            Value *row = b.CreateUDiv(index, c32(chunksPerRow));
            Value *col = b.CreateShl(b.CreateURem(index, c32(chunksPerRow)), 4);
            Value *key = wide(b.CreateAdd(key0, col));
            emitIf(b, b.CreateICmpSLT(key, keysPadded), "vt.row", [&] {
              Value *words = b.CreateAlignedLoad(
                  word4,
                  b.CreateInBoundsGEP(
                      b.getInt8Ty(), valuesT,
                      swizzledOffset(b, row, col, tile.rows, slab, 1)),
                  Align(16));
              Value *at = b.CreateAdd(b.CreateMul(wide(row), keysPadded), key);
              b.CreateAlignedStore(
                  words,
                  b.CreateAddrSpaceCast(
                      b.CreateInBoundsGEP(b.getInt8Ty(), rowsBase, at), global),
                  Align(16));
            });
          });
}

// Everything a round needs is derived from the parameters inside the
// loop, which LICM must not hoist: the writers run on the producer
// warpgroup's 32 registers, and values carried around the loop spilled.
void WritersEmitter::emit(Value *params) {
  smem = target.sharedMemory(b, 0);
  Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *header = BasicBlock::Create(b.getContext(), "vt.claim", fn);
  BasicBlock *body = BasicBlock::Create(b.getContext(), "vt.tile", fn);
  BasicBlock *exit = BasicBlock::Create(b.getContext(), "vt.done", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  thread =
      b.CreateSub(target.threadId(b), c32(32 * (spec.warps + 1)), "vt.writer");
  ValuesTFlags flags = ValuesTFlags::read(b, spec, params);
  Value *pairs =
      b.CreateMul(p.get(kBatch, "batch"), p.get(kHeadsKv, "headsKv"));
  Value *total = b.CreateMul(pairs, flags.tilesPerPair, "vt.total");
  emitIf(b, b.CreateICmpEQ(thread, c32(0)), "vt.take", [&] {
    Value *counter = b.CreateInBoundsGEP(b.getInt32Ty(), flags.flags,
                                         b.CreateZExt(total, b.getInt64Ty()));
    Value *taken = b.CreateAtomicRMW(AtomicRMWInst::Add, counter, c32(1),
                                     Align(4), AtomicOrdering::Monotonic);
    b.CreateAlignedStore(taken, shared(layout.writerClaimOffset()), Align(4));
  });
  meet();
  Value *taken = b.CreateAlignedLoad(
      b.getInt32Ty(), shared(layout.writerClaimOffset()), Align(4));
  b.CreateCondBr(b.CreateICmpULT(taken, total), body, exit);

  // Each step reads the claimed tile again from shared memory rather than
  // carry it through the transposition's registers.
  b.SetInsertPoint(body);
  Claimed tile = claimed(params);
  Value *headBase = b.CreateInBoundsGEP(
      b.getInt8Ty(), p.get(kV, "v"),
      b.CreateAdd(
          b.CreateMul(wide(tile.batch), p.stride(kVStrides, 0, "v.batch")),
          b.CreateMul(wide(tile.head), p.stride(kVStrides, 2, "v.head"))));
  copyRows(headBase, tile.key0, p.get(kSeqlenK, "seqlenK"));
  meet();
  emitFp8TransposeValues(
      b, layout, layout.writerStaged, shared(layout.writerStaged.offset),
      layout.writerValues, shared(layout.writerValues.offset), thread);
  meet();
  tile = claimed(params);
  Value *keysPadded = paddedKeys(b, p.get(kSeqlenK, "seqlenK"));
  Value *rowsBase = b.CreateInBoundsGEP(
      b.getInt8Ty(), p.get(kValuesT, "valuesT"),
      b.CreateMul(b.CreateMul(wide(tile.pair), b.getInt64(dv)), keysPadded));
  storeRows(rowsBase, keysPadded, tile.key0);
  // Each thread's stores before the flag that thread 0 releases.
  InlineAsm *fence = InlineAsm::get(FunctionType::get(b.getVoidTy(), false),
                                    "fence.acq_rel.gpu;", "~{memory}",
                                    /*hasSideEffects=*/true);
  b.CreateCall(fence);
  meet();
  emitIf(b, b.CreateICmpEQ(thread, c32(0)), "vt.ready", [&] {
    Claimed done = claimed(params);
    emitGlobalFlagSet(
        b, ValuesTFlags::read(b, spec, params).flag(b, done.pair, done.tile));
  });
  disableHoisting(b.CreateBr(header));
  b.SetInsertPoint(exit);
}

void fmhajit::emitValuesTWriters(IRBuilderBase &b, GpuTargetInfo &target,
                                 Value *params) {
  WritersEmitter(b, target, params).emit(params);
}
