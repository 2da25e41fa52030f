//===- NvptxWgmmaTileOps.cpp - Tensor-core tiles: wgmma m64nNk16 ----------===//
//
// pipeline=wgmma on sm_90a, on the register tiles and cp.async copies of
// NvptxFragmentTileOps:
//  - Each warp owns 16 query rows, so a warpgroup (four warps) owns the 64
//    rows one wgmma computes, and S and O are wgmma accumulators in the
//    layout the mma pipeline uses.
//  - Q, K and V are copied into the swizzled slabs of
//    specs/pipelines/WgmmaLayout.h, which the tensor cores read through
//    matrix descriptors: no ldmatrix.
//  - S = Q K^T:  A = this warpgroup's 64 rows of Q and B = K, both K-major
//                descriptors, one wgmma per 16 columns of d.
//    O += P V:   A = P from registers (S's accumulators converted, as for
//                mma), B = V by an MN-major descriptor (V rows run along K).
//    Each product is fenced, issued and committed as a group, and waited
//    for in finishProduct(), its accumulators threaded through
//    (NvptxWgmma.h); wait_group lets the groups issued after it run on.
//    Under stages=2 the recipe overlaps products with the softmax
//    (overlapsProducts()): S_j and P_j-1 V_j-1 are in flight together.
//  - Under stages=2 these ops run on the consumer warps only: the producer
//    warp loads the tiles by TMA (NvptxTma.h). load() then just counts the
//    ring's loads, a tile's first use waits for its slot's full barrier,
//    and one thread of each warpgroup arrives on the slot's empty barrier
//    once the warpgroup's product that read it has completed (Q's: one
//    thread of each warp, at retire()). Under pack_gqa Q is no TMA box:
//    each warpgroup copies its own rows of Q itself (copyQueryRows).
//
//===----------------------------------------------------------------------===//
#include "ir/targets/NvptxWgmmaTileOps.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxTimeline.h"
#include "ir/targets/NvptxTma.h"
#include "ir/targets/NvptxWgmma.h"
#include "specs/ArchTable.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include <optional>

using namespace fmhajit;
using namespace llvm;

NvptxWgmmaTileOps::NvptxWgmmaTileOps(IRBuilderBase &b, GpuTargetInfo &target,
                                     const WgmmaLayout &layout)
    : NvptxFragmentTileOps(b, target, /*mTiles=*/1, layout.bytes()),
      layout(layout) {
  tensorCoresReadShared = true;
  reducesInTree = true;
  storesWholeBlocks = true;
  skipsUnitRescale = spec.headDimV() >= 128;
  votesOnRowParts =
      skipsUnitRescale && !(spec.dropout && spec.headDimV() > 128);
  if (usesTensorMaps(spec))
    ring.emplace(b, target, this->layout, smem);
  if (ring && target.options.timeline)
    stamps = timelineCounter(*b.GetInsertBlock()->getParent());
  // Tiles sit on swizzle-atom boundaries of the shared window.
  auto *global = cast<GlobalVariable>(smem);
  global->setAlignment(std::max(global->getAlign().valueOrOne(),
                                Align(WgmmaLayout::kTileAlignment)));
}

void NvptxWgmmaTileOps::load(Tile &tile, const GlobalRows &src, Value *valid,
                             Value *scale) {
  if (!ring)
    return NvptxFragmentTileOps::load(tile, src, valid, scale);
  deferScale(tile, scale);
  if (tile.role == TileRole::Query && layout.copiesQueryRows())
    return copyQueryRows(tile, src, valid);
  acquired.erase(tile.storage);
  ring->next(tile.role);
}

// Under pack_gqa a tile's rows are the (token, head) pairs of a GQA group
// (ir/WorkItem.h), which no tensor map's box describes, so the producer
// loads only K and V and the consumers copy Q as stages=1 does, each row
// where QueryTileRows finds it. A warpgroup's products read only its own 64
// rows, so each warpgroup copies those, and waits and meets only its own
// warps: no warpgroup waits for another's copies or turns. The producer's
// first K and V boxes are already on their way while Q copies. The wait
// is here rather than at Q's first product: an item that sees no key takes
// no product, and its copies must not be in flight when the block exits or
// the next item's Q overwrites them.
//   bar.sync 4+w, 128             ; a walking block: the last item's reads
//   cp.async.cg.shared.global [Q + swizzled chunk], [row + col], 16|0
//     (rows 64w.., rows * d / 8 / 128 a thread)
//   cp.async.commit_group; cp.async.wait_group 0
//   fence.proxy.async.shared::cta  ; wgmma reads through the async proxy
//   bar.sync 4+w, 128
void NvptxWgmmaTileOps::copyQueryRows(Tile &tile, const GlobalRows &src,
                                      Value *valid) {
  unsigned threads = WgmmaLayout::kWarpsPerGroup * 32;
  // A warpgroup's 64 rows, or the whole tile where keys are the rows.
  unsigned rows = std::min(spec.bm, WgmmaLayout::kWarpsPerGroup *
                                        WgmmaLayout::kRowsPerWarp);
  Value *group = warpgroup();
  auto meet = [&] {
    b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_sync_aligned_count,
                      {b.CreateAdd(group, b.getInt32(kQueryRowsBarrier)),
                       b.getInt32(threads)});
  };
  // The last item's products on Q have completed (each warp waited for its
  // S): the barrier only makes sure every warp has.
  if (walksWorkItems(spec))
    meet();
  Value *thread = b.CreateAnd(target.threadId(b), b.getInt32(threads - 1));
  copyRows(tile, src, valid, thread, threads,
           b.CreateMul(group, b.getInt32(rows)), rows);
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_commit_group, {});
  b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {b.getInt32(0)});
  b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
  meet();
  acquired.insert(tile.storage);
}

void NvptxWgmmaTileOps::acquire(const Tile &tile) {
  if (!acquired.insert(tile.storage).second)
    return;
  TmaRing::Use use = ring->latest(tile.role);
  emitMbarrierWait(b, ring->full(tile.role, use.slot), use.parity,
                   target.options.boundedWaits);
}

// K and V are released after each product that read them, by one thread of
// each warpgroup: a product issues only once all four of its warps have, so
// every warp has passed its wait for the slot. Q is released once per work
// item, by retire(), where no product follows the wait: there one thread of
// each warp arrives (Q's empty barrier counts warps), after its own warp's
// wait. Were one thread to answer for a warpgroup, a warp still on its way
// to the wait could find Q's full barrier two phases on (the producer
// reloads Q as soon as the release completes), the parity it waits for
// already past: it waited forever (session 16: cuda-gdb found one warp of a
// warpgroup there, its three siblings at the next turn).
void NvptxWgmmaTileOps::release(const Tile &tile) {
  if (!ring)
    return;
  Value *slot = ring->latest(tile.role).slot;
  unsigned threads =
      tile.role == TileRole::Query ? 32 : WgmmaLayout::kWarpsPerGroup * 32;
  Value *first = b.CreateICmpEQ(
      b.CreateAnd(target.threadId(b), b.getInt32(threads - 1)), b.getInt32(0));
  emitIf(b, first, "release",
         [&] { emitMbarrierArrive(b, ring->empty(tile.role, slot)); });
}

// The wait is emitted even when a product already waited for Q: the
// `acquired` set follows the order the recipe is emitted in, not the paths
// it runs, and an item with no keys takes none of its products. Skipping the
// wait there let a block exit, or a persistent one reuse Q's slot, with Q's
// TMA still in flight; the copy then landed on the next block's shared
// memory and barrier, which waited forever. The phase the wait names is at
// most one behind: Q's slot reloads only after every warp's retire.
void NvptxWgmmaTileOps::retire(Tile &tile) {
  // Copied Q rows were waited for at their load: nothing is in flight, and
  // the producer never loads Q.
  if (!ring || tile.role != TileRole::Query || layout.copiesQueryRows())
    return;
  TmaRing::Use use = ring->latest(tile.role);
  emitMbarrierWait(b, ring->full(tile.role, use.slot), use.parity,
                   target.options.boundedWaits);
  release(tile);
}

Value *NvptxWgmmaTileOps::arrivesLast(Value *counters, Value *parts) {
  return ring ? emitWarpgroupArrival(b, target, counters, parts) : nullptr;
}

Value *NvptxWgmmaTileOps::tileAddress(const Tile &tile) {
  if (!ring || tile.role == TileRole::Query)
    return tile.storage;
  return ring->slotAddress(tile, ring->latest(tile.role).slot);
}

Value *NvptxWgmmaTileOps::chunkAddress(const Tile &tile, Value *key,
                                       Value *col) {
  unsigned slabBytes = layout.slabBytes(storedWidth(tile));
  return b.CreateInBoundsGEP(b.getInt8Ty(), tile.storage,
                             swizzledOffset(b, key, col, storedRows(tile),
                                            slabBytes, dtypeBytes(spec.dtype)));
}

Value *NvptxWgmmaTileOps::descriptorBase(const Tile &tile, Value *extra,
                                         const WgmmaOperand &op) {
  return wgmmaDescriptorBase(b, tileAddress(tile), extra, op);
}

// S = Q K^T for this warpgroup's 64 query rows: step kk covers 32 bytes of
// d (16 columns; 32 for fp8).
SmallVector<Value *, 128>
NvptxWgmmaTileOps::queryTimesKeys(const Tile &q, const Tile &kT, unsigned n) {
  WgmmaOperand kMajor;
  kMajor.swizzleBytes = layout.slabBytes(q.cols);
  Value *groupRows = b.CreateMul(
      b.CreateLShr(target.threadId(b), b.getInt32(7)),
      b.getInt32(4 * WgmmaLayout::kRowsPerWarp * kMajor.swizzleBytes));
  Value *qBase = descriptorBase(q, groupRows, kMajor);
  Value *kBase = descriptorBase(kT, nullptr, kMajor);
  return emitKMajorProducts(b, spec.dtype, kMajor, qBase, q.rows, kBase,
                            kT.cols, q.cols / layout.stepElements(), n / 2);
}

// O (+)= P V: step kk covers keys 16kk.., two swizzle atoms of V rows; V's
// slabs lie rows * (slab row bytes) apart along N. Under fp8 the slot holds
// V^T, K-major like K in S = Q K^T, and a step covers 32 keys.
SmallVector<Value *, 128> NvptxWgmmaTileOps::probabilitiesTimesValues(
    const Tile &s, const Tile &v, ArrayRef<Value *> acc, bool accumulate) {
  bool transposed = layout.valuesKMajor();
  WgmmaOperand operand;
  operand.swizzleBytes = layout.slabBytes(transposed ? v.rows : v.cols);
  operand.leadingBytes = transposed ? 16 : v.rows * operand.swizzleBytes;
  unsigned steps = s.cols / layout.stepElements();
  // Every A fragment is built before the fence: registers wgmma reads must
  // be written before it.
  SmallVector<SmallVector<Value *, 4>, 16> fragments;
  for (unsigned kk = 0; kk < steps; ++kk)
    fragments.push_back(probabilityFragments(s, 0, kk));
  Value *vBase = descriptorBase(v, nullptr, operand);
  DType typeA = transposed ? DType::F8E4M3 : spec.dtype;
  SmallVector<Value *, 128> sums(acc);
  emitWgmmaFence(b);
  for (unsigned kk = 0; kk < steps; ++kk) {
    unsigned offset = transposed
                          ? kMajorStepOffset(operand, v.cols, kk)
                          : kk * layout.stepElements() * operand.swizzleBytes;
    sums = emitWgmmaRegisters(b, typeA, spec.dtype, sums, accumulate || kk > 0,
                              fragments[kk],
                              wgmmaDescriptorAt(b, vBase, offset, operand),
                              /*transposeB=*/!transposed);
  }
  emitWgmmaCommit(b);
  return sums;
}

void NvptxWgmmaTileOps::startProduct(Tile &acc, const Tile &a, const Tile &bt,
                                     bool accumulate) {
  bool scores = acc.role == TileRole::Scores; // S = Q K^T, else O += P V
  for (const Tile *operand : {&bt, scores ? &a : nullptr}) {
    if (!operand)
      continue;
    if (ring)
      acquire(*operand);
    else
      waitFor(*operand);
    markRead(*operand);
  }
  InFlight product{acc, bt, {}, {}, scores ? deferredScale(a) : nullptr, 0};
  if (accumulate)
    for (unsigned e = 0; e < accCount(acc); ++e)
      product.old.push_back(b.CreateLoad(b.getFloatTy(), slot(acc.storage, e)));
  if (scores) {
    product.sums = queryTimesKeys(a, bt, acc.cols);
  } else {
    if (!accumulate)
      product.old.assign(accCount(acc), PoisonValue::get(b.getFloatTy()));
    product.sums = probabilitiesTimesValues(a, bt, product.old, accumulate);
    product.old.clear(); // tied to the product: O needs no add
  }
  inFlight.push_back(std::move(product));
}

// Ping-pong (FlashAttention-3): warpgroup w waits on named barrier 1 + w
// for its turn, issues, and arrives on the next warpgroup's barrier. Each
// barrier counts the two warpgroups that meet there.
void fmhajit::emitFirstProductTurn(IRBuilderBase &b, GpuTargetInfo &target) {
  unsigned groups = target.kernelSpec().warps / WgmmaLayout::kWarpsPerGroup;
  if (groups < 2)
    return;
  Value *group = b.CreateLShr(target.threadId(b), b.getInt32(7));
  emitIf(b, b.CreateICmpEQ(group, b.getInt32(groups - 1)), "first.turn", [&] {
    b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_arrive_aligned_count,
                      {b.getInt32(1), b.getInt32(256)});
  });
}

void NvptxWgmmaTileOps::beginProducts() {
  stamp(TimelineEvent::TurnWait);
  if (turnTakers() >= 2)
    b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_sync_aligned_count,
                      {turnBarrier(warpgroup()), b.getInt32(256)});
  stamp(TimelineEvent::Issue);
}

void NvptxWgmmaTileOps::endProducts() {
  stamp(TimelineEvent::Issued);
  unsigned groups = turnTakers();
  if (groups < 2)
    return;
  Value *next =
      b.CreateURem(b.CreateAdd(warpgroup(), b.getInt32(1)), b.getInt32(groups));
  b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_arrive_aligned_count,
                    {turnBarrier(next), b.getInt32(256)});
}

void NvptxWgmmaTileOps::finishProduct(Tile &acc) {
  emitFinish(takeProduct(acc));
  stamp(acc.role == TileRole::Scores ? TimelineEvent::ScoresReady
                                     : TimelineEvent::OutputReady);
}

// ptxas schedules a wgmma wait as early as the registers allow: after the
// softmax in the PTX, the wait for O's product landed before its first
// exp2 in the SASS (fp8 and bf16, d = 128), so the softmax never overlapped
// P V. A wait inside a branch stays there. wgmma.wait_group is
// warpgroup-aligned, so the branch must go the same way in all four warps:
// session 19 branched on each warp's vote on O's rescale, which
// compute-sanitizer's synccheck caught (warps of one warpgroup at the two
// sides' waits); the warpgroup's vote (bar.red.or) cost 5-9%. So the branch
// is on %nctaid.x != 0, always true and uniform, read by inline asm that
// neither LLVM nor ptxas folds, and the warp's vote on the rescale comes
// after the wait. The other side waits too, so that O stays one set of
// registers (docs/design.md, "The softmax's cost per score").
//
// Measured on the H100 against the wait ptxas hoisted (docs/results.md,
// session 19): bf16 and fp16 at dv >= 128 gained up to 13% (d = 128), and
// causal d = 64 on three consumer warpgroups 3-6%; fp8 d = 128 lost 5-6%
// (a second run: a tie) and unmasked d = 64 up to 5%, so those keep the
// wait where ptxas puts it. The uniform branch runs within 2% of session
// 19's (causal d = 64: 3-4% behind; session 20).
void NvptxWgmmaTileOps::finishProductScaled(Tile &acc, const RowVec &factor) {
  bool causal = spec.mask == Mask::Causal || spec.mask == Mask::CausalBr;
  bool waitsAfterSoftmax =
      ring && !isFp8(spec.dtype) &&
      (spec.headDimV() >= 128 || (causal && turnTakers() == 3));
  if (!waitsAfterSoftmax)
    return NvptxFragmentTileOps::finishProductScaled(acc, factor);
  InFlight product = takeProduct(acc);
  auto *asmType = FunctionType::get(b.getInt1Ty(), {}, /*isVarArg=*/false);
  Value *gridNotEmpty = b.CreateCall(InlineAsm::get(
      asmType, "{ .reg .u32 n; mov.u32 n, %nctaid.x; setp.ne.u32 $0, n, 0; }",
      "=b", /*hasSideEffects=*/true));
  emitIfElse(
      b, gridNotEmpty, "wait.o",
      [&] {
        emitFinish(product);
        NvptxFragmentTileOps::scaleRows(acc, factor);
      },
      [&] { emitFinish(product); });
  stamp(TimelineEvent::OutputReady);
}

NvptxWgmmaTileOps::InFlight NvptxWgmmaTileOps::takeProduct(const Tile &acc) {
  auto it = llvm::find_if(inFlight, [&](const InFlight &p) {
    return p.acc.storage == acc.storage;
  });
  assert(it != inFlight.end() && "finishProduct without startProduct");
  InFlight product = std::move(*it);
  product.younger = static_cast<unsigned>(inFlight.end() - it - 1);
  inFlight.erase(it);
  return product;
}

// wait_group N lets the N youngest groups run on: those issued after acc's.
void NvptxWgmmaTileOps::emitFinish(const InFlight &product) {
  SmallVector<Value *, 128> sums =
      emitWgmmaWait(b, product.younger, product.sums);
  release(product.b);
  for (unsigned e = 0; e < sums.size(); ++e) { // S (+)= scale * (Q K^T)
    Value *v = sums[e];
    if (product.scale && !product.old.empty())
      v = b.CreateIntrinsic(Intrinsic::fmuladd, {b.getFloatTy()},
                            {v, product.scale, product.old[e]});
    else if (product.scale)
      v = b.CreateFMul(v, product.scale);
    else if (!product.old.empty())
      v = b.CreateFAdd(v, product.old[e]);
    b.CreateStore(v, slot(product.acc.storage, e));
  }
}

std::unique_ptr<TileOps>
fmhajit::createNvptxWgmmaTileOps(IRBuilderBase &b, GpuTargetInfo &target) {
  const KernelSpec &spec = target.kernelSpec();
  WgmmaLayout layout(spec, *findArch(spec.target));
  if (keysAsRows(spec))
    return createNvptxWgmmaKeyRowsTileOps(b, target, layout);
  return std::make_unique<NvptxWgmmaTileOps>(b, target, layout);
}
