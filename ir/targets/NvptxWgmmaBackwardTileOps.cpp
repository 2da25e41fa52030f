//===- NvptxWgmmaBackwardTileOps.cpp - The backward on wgmma --------------===//
//
// The words of the backward recipe (ir/BackwardKernel.cpp) on sm_90a's
// warpgroup MMA, with FlashAttention-3's data flow
// (specs/pipelines/WgmmaBackwardLayout.h). Warpgroup w owns keys
// 64w..64w+63 of the block's key tile; each of its warps 16 of them.
//  - Scores tiles (S, P, dP, dS) are held transposed: wgmma accumulators
//    of m64nN with N = bm, keys as rows, queries as columns. Elementwise
//    words hand their callbacks (query, key) coordinates all the same, and
//    the row vectors (LSE, D) sit in shared memory, where each lane reads
//    the queries of its columns.
//      S^T = K Q^T, dP^T = V dO^T   A: the warpgroup's K (V) rows, B: Q
//                                   (dO), both K-major descriptors
//  - P^T and dS^T in 16 bits are the A fragments of the key-major products,
//    straight from the accumulators (as the forward's P for O += P V):
//      dV += P^T dO, dK += dS^T Q   A: registers, B: dO (Q) rows, MN-major
//    These two are issued and left running: they are waited for before
//    anything rewrites what they read (the next Q and dO) or before dK and
//    dV are stored.
//  - dQ = dS K: the warpgroups write dS^T into shared memory, [bn][bm] in
//    swizzled slabs, and each computes its rows and columns of dQ from it:
//      A: dS^T read as MN-major dS, B: K's rows as MN-major K
//    then adds them to the fp32 workspace (red.global.add.v2.f32).
//  - Q, dO, K and V are copied with cp.async by every thread into
//    WgmmaLayout's swizzled slabs (NvptxFragmentTileOps::load); a product
//    waits for its operands' copies. The next step's Q and dO are copied
//    into second buffers (and its LSE and D rows loaded) while this step's
//    products run (prefetch, prefetchRows); its load() then flips buffers.
//
//===----------------------------------------------------------------------===//
#include "ir/targets/NvptxWgmmaBackwardTileOps.h"
#include "ir/Loops.h"
#include "ir/targets/NvptxWgmma.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

NvptxWgmmaBackwardTileOps::NvptxWgmmaBackwardTileOps(IRBuilderBase &b,
                                                     GpuTargetInfo &target)
    : NvptxFragmentTileOps(b, target, /*mTiles=*/1,
                           WgmmaBackwardLayout(target.kernelSpec()).bytes()),
      layout(target.kernelSpec()) {
  tensorCoresReadShared = true;
  storesWholeBlocks = true;
  auto *global = cast<GlobalVariable>(smem);
  global->setAlignment(std::max(global->getAlign().valueOrOne(),
                                Align(WgmmaLayout::kTileAlignment)));
  Value *warp = b.CreateLShr(target.threadId(b), b.getInt32(5));
  group = b.CreateLShr(warp, b.getInt32(2), "group");
  keyRow0 = warpRow0;
  Value *rowGroup = b.CreateURem(group, b.getInt32(layout.dqRowGroups));
  queryRow0 = b.CreateAdd(
      b.CreateMul(rowGroup, b.getInt32(WgmmaBackwardLayout::kKeysPerGroup)),
      b.CreateMul(b.CreateAnd(warp, b.getInt32(3)), b.getInt32(16)),
      "query.row0");
  if (layout.dqColGroups > 1)
    gradCol0 = b.CreateMul(b.CreateUDiv(group, b.getInt32(layout.dqRowGroups)),
                           b.getInt32(spec.d / layout.dqColGroups), "dq.col0");
}

// The recipe makes Q before dO and K^T before V^T (makeGradTiles), and the
// LSE before D.
Tile NvptxWgmmaBackwardTileOps::makeTile(TileRole role, unsigned rows,
                                         unsigned cols, const Twine &name) {
  auto shared = [&](const SharedTile &place) {
    return Tile{
        role, rows, cols,
        b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, place.offset)};
  };
  auto registers = [&](unsigned count) {
    return Tile{role, rows, cols,
                entryAlloca(b, b.getFloatTy(), name, 4, count)};
  };
  switch (role) {
  case TileRole::Query: {
    assert(queryTiles < 2 && "Q and dO");
    Tile tile = shared(queryTiles++ ? layout.dO : layout.query);
    if (queryTiles == 1)
      queryStorage = tile.storage;
    return tile;
  }
  case TileRole::KeyT:
    assert(keyTiles < 2 && "K^T and V^T");
    return shared(keyTiles++ ? layout.values : layout.keys);
  case TileRole::Scores: // transposed: N = rows (an unused dtanh may be 16)
    return registers(rows / 2);
  case TileRole::KeyGrad:
    return registers(cols / 2);
  case TileRole::Output:
    return registers(cols / layout.dqColGroups / 2);
  default:
    llvm_unreachable("QueryRows, Keys and ScoresT are views");
  }
}

Tile NvptxWgmmaBackwardTileOps::accumulator(const Tile &t) const {
  switch (t.role) {
  case TileRole::Scores:
  case TileRole::ScoresT:
    return {TileRole::Output, spec.bn,
            t.role == TileRole::Scores ? t.rows : t.cols, t.storage};
  case TileRole::KeyGrad:
    return {TileRole::Output, t.rows, t.cols, t.storage};
  case TileRole::Output:
    return {TileRole::Output, t.rows, t.cols / layout.dqColGroups, t.storage};
  default:
    llvm_unreachable("not a register tile");
  }
}

Value *NvptxWgmmaBackwardTileOps::chunkAddress(const Tile &tile, Value *key,
                                               Value *col) {
  bool keysT = tile.role == TileRole::KeyT; // stored as K (V) rows
  unsigned rows = keysT ? tile.cols : tile.rows;
  unsigned width = keysT ? tile.rows : tile.cols;
  return b.CreateInBoundsGEP(
      b.getInt8Ty(), tile.storage,
      swizzledOffset(b, key, col, rows, WgmmaBackwardLayout::slabBytes(width),
                     dtypeBytes(spec.dtype)));
}

// Loads rewrite what the products still running read (Q and dO for dK and
// dV): those finish first. A prefetched tile's load takes the buffer its
// prefetch filled.
void NvptxWgmmaBackwardTileOps::load(Tile &tile, const GlobalRows &src,
                                     Value *valid, Value *scale) {
  assert((tile.role == TileRole::Query || tile.role == TileRole::KeyT) &&
         "bwd_dq_dk_dv loads Q, dO, K and V");
  storePendingRows();
  finishAll();
  Value *index = bufferIndex.lookup(tile.storage);
  if (!index)
    return NvptxFragmentTileOps::load(tile, src, valid, scale);
  b.CreateStore(b.CreateXor(b.CreateLoad(b.getInt32Ty(), index), b.getInt32(1)),
                index);
  deferScale(tile, scale);
  awaiting.insert(tile.storage);
}

// The prefetch goes into the buffer the current step does not read. The
// last step to read it (two loads ago) finished its products at the last
// load(), and every thread has passed a barrier since (the acquire that
// follows each load): no thread reads it any more.
void NvptxWgmmaBackwardTileOps::prefetch(Tile &tile, const GlobalRows &src,
                                         Value *valid) {
  assert(tile.role == TileRole::Query && "prefetches of Q and dO");
  Value *&index = bufferIndex[tile.storage];
  if (!index) {
    index = entryAlloca(b, b.getInt32Ty(), "buffer");
    b.CreateStore(b.getInt32(0), index);
  }
  Value *other =
      b.CreateXor(b.CreateLoad(b.getInt32Ty(), index), b.getInt32(1));
  Tile target = tile;
  target.storage = bufferAddress(tile, other);
  NvptxFragmentTileOps::load(target, src, valid, nullptr);
}

// Each step's prefetched Q and dO are its only copies in flight when it
// first reads either (the next step's are issued after): one wait for both.
void NvptxWgmmaBackwardTileOps::acquire(const Tile &tile) {
  storePendingRows();
  if (awaiting.count(tile.storage)) {
    b.CreateIntrinsic(Intrinsic::nvvm_cp_async_wait_group, {b.getInt32(0)});
    b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
    barrier();
    awaiting.clear();
    rowsUnpublished = false;
    return;
  }
  if (waitFor(tile))
    rowsUnpublished = false;
  markRead(tile);
}

Value *NvptxWgmmaBackwardTileOps::currentAddress(const Tile &tile) {
  Value *index = bufferIndex.lookup(tile.storage);
  if (!index)
    return tile.storage;
  return bufferAddress(tile, b.CreateLoad(b.getInt32Ty(), index));
}

// The callbacks take (query, key): the accumulator's column and row.
void NvptxWgmmaBackwardTileOps::map(Tile &tile, ElementFn fn) {
  assert(tile.role == TileRole::Scores && "map of S, P, dP or dS");
  forget(tile.storage);
  Tile acc = accumulator(tile);
  auto swapped = [&](IRBuilderBase &b, Value *key, Value *query, Value *x) {
    return fn(b, query, key, x);
  };
  withOrigin(tile, [&] { NvptxFragmentTileOps::map(acc, swapped); });
}

void NvptxWgmmaBackwardTileOps::zip(Tile &t, const Tile &other, ZipFn fn) {
  assert(t.role == other.role && t.rows == other.rows && t.cols == other.cols &&
         "zip same shapes");
  forget(t.storage);
  Tile acc = accumulator(t);
  for (unsigned e = 0; e < accCount(acc); ++e) {
    Value *p = slot(t.storage, e);
    Value *x = b.CreateLoad(b.getFloatTy(), p);
    Value *y = b.CreateLoad(b.getFloatTy(), slot(other.storage, e));
    b.CreateStore(fn(b, x, y), p);
  }
}

Tile NvptxWgmmaBackwardTileOps::transposed(const Tile &t) {
  if (t.role == TileRole::KeyT) // K's rows in shared memory are K^T's columns
    return {TileRole::Keys, t.cols, t.rows, t.storage};
  assert(t.role == TileRole::Scores && "transposed() of S^T or K^T");
  return {TileRole::ScoresT, t.cols, t.rows, t.storage};
}

SmallVector<Value *, 128>
NvptxWgmmaBackwardTileOps::accumulators(const Tile &acc, bool accumulate) {
  SmallVector<Value *, 128> sums;
  for (unsigned e = 0; e < accCount(acc); ++e)
    sums.push_back(accumulate ? static_cast<Value *>(b.CreateLoad(
                                    b.getFloatTy(), slot(acc.storage, e)))
                              : PoisonValue::get(b.getFloatTy()));
  return sums;
}

// S^T and dP^T are read at once; dV and dK run on until something rewrites
// their operands; dQ's adds follow at once.
void NvptxWgmmaBackwardTileOps::multiply(Tile &acc, const Tile &a,
                                         const Tile &bt, bool accumulate) {
  forget(acc.storage);
  Tile view = accumulator(acc);
  if (acc.role == TileRole::Scores) {
    startProduct(acc, a, bt, accumulate);
    return finish(acc.storage);
  }
  if (acc.role == TileRole::KeyGrad) { // a: P^T (dS^T), bt: dO (Q) rows
    assert(a.role == TileRole::ScoresT && "dV and dK read P^T or dS^T");
    acquire(bt);
    return issue(view, scoresTTimesRows(a, bt, accumulators(view, true)),
                 nullptr);
  }
  assert(acc.role == TileRole::Output && a.role == TileRole::Scores &&
         bt.role == TileRole::Keys && "dQ = dS K");
  writeGrads(a);
  acquire(bt);
  issue(view, gradsTimesKeys(bt, accumulators(view, accumulate), accumulate),
        nullptr);
  finish(acc.storage);
}

// S^T = K Q^T or dP^T = V dO^T (a: Q or dO, bt: K^T or V^T); the other
// products run at once (multiply).
void NvptxWgmmaBackwardTileOps::startProduct(Tile &acc, const Tile &a,
                                             const Tile &bt, bool accumulate) {
  if (acc.role != TileRole::Scores)
    return multiply(acc, a, bt, accumulate);
  assert(!accumulate && "S and dP start at zero");
  storePendingRows();
  forget(acc.storage);
  acquire(bt);
  acquire(a);
  Tile view = accumulator(acc);
  issue(view, keysTimesRows(bt, a, view.cols), deferredScale(a));
}

SmallVector<Value *, 128>
NvptxWgmmaBackwardTileOps::keysTimesRows(const Tile &keys, const Tile &rows,
                                         unsigned n) {
  WgmmaOperand kMajor;
  kMajor.swizzleBytes = WgmmaBackwardLayout::slabBytes(rows.cols);
  Value *groupRows =
      b.CreateMul(group, b.getInt32(WgmmaBackwardLayout::kKeysPerGroup *
                                    kMajor.swizzleBytes));
  Value *keysBase = wgmmaDescriptorBase(b, keys.storage, groupRows, kMajor);
  Value *rowsBase =
      wgmmaDescriptorBase(b, currentAddress(rows), nullptr, kMajor);
  return emitKMajorProducts(b, spec.dtype, kMajor, keysBase, spec.bn, rowsBase,
                            rows.rows, rows.cols / 16, n / 2);
}

// Step kk covers queries 16kk..: two swizzle atoms of the rows, whose
// slabs lie bm * (slab row bytes) apart along N.
SmallVector<Value *, 128> NvptxWgmmaBackwardTileOps::scoresTTimesRows(
    const Tile &scoresT, const Tile &rows, ArrayRef<Value *> acc) {
  // Every A fragment is built before the fence: registers wgmma reads must
  // be written before it.
  ArrayRef<SmallVector<Value *, 4>> fragments = packedFragments(scoresT);
  unsigned steps = fragments.size();
  WgmmaOperand mnMajor;
  mnMajor.swizzleBytes = WgmmaBackwardLayout::slabBytes(rows.cols);
  mnMajor.leadingBytes = rows.rows * mnMajor.swizzleBytes;
  Value *rowsBase =
      wgmmaDescriptorBase(b, currentAddress(rows), nullptr, mnMajor);
  SmallVector<Value *, 128> sums(acc);
  emitWgmmaFence(b);
  for (unsigned kk = 0; kk < steps; ++kk)
    sums = emitWgmmaRegisters(
        b, spec.dtype, spec.dtype, sums, /*accumulate=*/true, fragments[kk],
        wgmmaDescriptorAt(b, rowsBase, kk * 16 * mnMajor.swizzleBytes, mnMajor),
        /*transposeB=*/true);
  emitWgmmaCommit(b);
  return sums;
}

// dQ rows of this warpgroup from dS^T's slab of them (MN-major A), its
// columns from K's slabs of them (MN-major B); step kk covers keys 16kk..
SmallVector<Value *, 128> NvptxWgmmaBackwardTileOps::gradsTimesKeys(
    const Tile &keys, ArrayRef<Value *> acc, bool accumulate) {
  const SharedTile &grads = layout.grads;
  WgmmaOperand gradsOp, keysOp;
  gradsOp.swizzleBytes = WgmmaBackwardLayout::slabBytes(spec.bm);
  gradsOp.leadingBytes = spec.bn * gradsOp.swizzleBytes;
  keysOp.swizzleBytes = WgmmaBackwardLayout::slabBytes(spec.d);
  keysOp.leadingBytes = spec.bn * keysOp.swizzleBytes;
  // Byte offsets of the warpgroup's first query and column: whole slabs.
  auto slabStart = [&](Value *first, const WgmmaOperand &op) -> Value * {
    if (!first)
      return nullptr;
    Value *slab = b.CreateUDiv(first, b.getInt32(op.swizzleBytes / 2));
    return b.CreateMul(slab, b.getInt32(op.leadingBytes));
  };
  Value *firstQuery =
      b.CreateMul(b.CreateURem(group, b.getInt32(layout.dqRowGroups)),
                  b.getInt32(WgmmaBackwardLayout::kKeysPerGroup));
  Value *gradsBase = wgmmaDescriptorBase(
      b, b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, grads.offset),
      slabStart(firstQuery, gradsOp), gradsOp);
  Value *keysBase =
      wgmmaDescriptorBase(b, keys.storage, slabStart(gradCol0, keysOp), keysOp);
  SmallVector<Value *, 128> sums(acc);
  emitWgmmaFence(b);
  for (unsigned kk = 0; kk < spec.bn / 16; ++kk)
    sums = emitWgmmaShared(
        b, spec.dtype, sums, accumulate || kk > 0,
        wgmmaDescriptorAt(b, gradsBase, kk * 16 * gradsOp.swizzleBytes,
                          gradsOp),
        wgmmaDescriptorAt(b, keysBase, kk * 16 * keysOp.swizzleBytes, keysOp),
        /*transposeB=*/true, /*transposeA=*/true);
  emitWgmmaCommit(b);
  return sums;
}

ArrayRef<SmallVector<Value *, 4>>
NvptxWgmmaBackwardTileOps::packedFragments(const Tile &scores) {
  if (fragmentsOf == scores.storage && fragmentsBlock == b.GetInsertBlock())
    return fragments;
  Tile acc = accumulator(scores);
  fragments.clear();
  for (unsigned kk = 0; kk < acc.cols / 16; ++kk)
    fragments.push_back(probabilityFragments(acc, 0, kk));
  fragmentsOf = scores.storage;
  fragmentsBlock = b.GetInsertBlock();
  return fragments;
}

// Lane (g, t) holds keys g and g + 8 of its warp's 16 and queries 2t and
// 2t + 1 of each 8, packed as the A fragments: word r of step kk holds key
// g + 8 (r & 1) at queries 16kk + 8 (r >> 1) + 2t. A 4-byte store each, at
// (key, query) of the [bn][bm] tile; the products read it through the
// async proxy.
void NvptxWgmmaBackwardTileOps::writeGrads(const Tile &dS) {
  Tile grads{
      TileRole::ScoresT, spec.bn, spec.bm,
      b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem, layout.grads.offset)};
  barrierIfRead(grads);
  ArrayRef<SmallVector<Value *, 4>> words = packedFragments(dS);
  unsigned slabBytes = WgmmaBackwardLayout::slabBytes(spec.bm);
  withOrigin(dS, [&] {
    for (unsigned kk = 0; kk < words.size(); ++kk)
      for (unsigned r = 0; r < 4; ++r) {
        Value *key = rowOf(0, 2 * (r & 1));
        Value *query = colOf(2 * kk + (r >> 1), 0);
        Value *offset = swizzledOffset(b, key, query, spec.bn, slabBytes,
                                       dtypeBytes(spec.dtype));
        b.CreateAlignedStore(
            words[kk][r],
            b.CreateInBoundsGEP(b.getInt8Ty(), grads.storage, offset),
            Align(4));
      }
  });
  b.CreateIntrinsic(Intrinsic::nvvm_fence_proxy_async_shared_cta, {});
  barrier();
  markRead(grads);
}

// wait_group N lets the N youngest groups run on: those issued after it.
void NvptxWgmmaBackwardTileOps::finish(Value *storage) {
  auto it = llvm::find_if(
      inFlight, [&](const InFlight &p) { return p.acc.storage == storage; });
  assert(it != inFlight.end() && "finish without a product");
  storePendingRows();
  unsigned younger = static_cast<unsigned>(inFlight.end() - it - 1);
  SmallVector<Value *, 128> sums = emitWgmmaWait(b, younger, it->sums);
  forget(storage);
  for (unsigned e = 0; e < sums.size(); ++e) {
    Value *v = it->scale ? b.CreateFMul(sums[e], it->scale) : sums[e];
    b.CreateStore(v, slot(it->acc.storage, e));
  }
  // Older products have completed too: the same wait, already satisfied,
  // defines their accumulators.
  SmallVector<InFlight, 4> older(inFlight.begin(), it);
  inFlight.erase(inFlight.begin(), it + 1);
  for (InFlight &p : older) {
    SmallVector<Value *, 128> done = emitWgmmaWait(b, younger, p.sums);
    for (unsigned e = 0; e < done.size(); ++e)
      b.CreateStore(done[e], slot(p.acc.storage, e));
  }
}

// dK and dV are stored once the steps are done. The last step's prefetch
// (of no rows: it zero-fills a buffer) is still in flight: it completes
// here, before the block can end with a copy into its shared memory.
void NvptxWgmmaBackwardTileOps::store(const Tile &tile, const GlobalRows &dst,
                                      Value *valid) {
  finishAll();
  NvptxFragmentTileOps::drain();
  Tile acc = accumulator(tile);
  withOrigin(tile, [&] { NvptxFragmentTileOps::store(acc, dst, valid); });
}

void NvptxWgmmaBackwardTileOps::storeAdd(const Tile &t, const GlobalRows &dst,
                                         Value *valid) {
  Tile acc = accumulator(t);
  // red.global.add.v2.f32 is PTX 8.1 (sm_90a's oldest is 8.0).
  bool pairAdds = target.options.ptxVersion >= 81;
  withOrigin(t, [&] { addToGlobal(acc, dst, valid, pairAdds); });
}
std::unique_ptr<TileOps>
fmhajit::createNvptxWgmmaBackwardTileOps(IRBuilderBase &b,
                                         GpuTargetInfo &target) {
  return std::make_unique<NvptxWgmmaBackwardTileOps>(b, target);
}
