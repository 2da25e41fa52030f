//===- NvptxTma.cpp - TMA loads and mbarriers on sm_90a, as IR ------------===//
#include "ir/targets/NvptxTma.h"
#include "ir/Loops.h"
#include "specs/ArchTable.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

namespace {
/// A side-effecting inline PTX statement returning \p ret (void if null).
CallInst *ptx(IRBuilderBase &b, Type *ret, StringRef text,
              StringRef constraints, ArrayRef<Value *> args) {
  SmallVector<Type *, 8> types;
  for (Value *arg : args)
    types.push_back(arg->getType());
  auto *fn =
      InlineAsm::get(FunctionType::get(ret ? ret : b.getVoidTy(), types, false),
                     text, constraints, /*hasSideEffects=*/true);
  CallInst *call = b.CreateCall(fn, args);
  call->addFnAttr(Attribute::Convergent);
  return call;
}
} // namespace

Value *fmhajit::sharedAddress(IRBuilderBase &b, Value *ptr) {
  return b.CreatePtrToInt(ptr, b.getInt32Ty());
}

void fmhajit::emitMbarrierInit(IRBuilderBase &b, Value *bar, unsigned count) {
  ptx(b, nullptr, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
      {sharedAddress(b, bar), b.getInt32(count)});
}

void fmhajit::emitMbarrierInitFence(IRBuilderBase &b) {
  ptx(b, nullptr, "fence.mbarrier_init.release.cluster;", "", {});
}

void fmhajit::emitMbarrierArrive(IRBuilderBase &b, Value *bar) {
  ptx(b, nullptr, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r",
      {sharedAddress(b, bar)});
}

void fmhajit::emitMbarrierExpectBytes(IRBuilderBase &b, Value *bar,
                                      unsigned bytes) {
  ptx(b, nullptr, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
      "r,r", {sharedAddress(b, bar), b.getInt32(bytes)});
}

// One copy of the give-up message per module, shared by every wait.
static Constant *waitMessage(IRBuilderBase &b) {
  Module &m = *b.GetInsertBlock()->getModule();
  if (GlobalVariable *message = m.getNamedGlobal("fmhajit.wait.message"))
    return message;
  return b.CreateGlobalString(
      "fmhajit: block %u thread %u waited " +
          std::to_string(kBoundedWaitSeconds) +
          " s for phase parity %u of the mbarrier at shared address %u and "
          "gave up (the TMA ring's "
          "phases disagree); trapping\n",
      "fmhajit.wait.message");
}

// printf("...", block, thread, parity, barrier), then a trap: the launch
// fails with the message on the process's stdout. The barrier's shared
// address names which one (WgmmaLayout::barrierOffset and the ring's order).
static void emitGiveUp(IRBuilderBase &b, Value *parity, Value *address) {
  Module &m = *b.GetInsertBlock()->getModule();
  FunctionCallee vprintf = m.getOrInsertFunction("vprintf", b.getInt32Ty(),
                                                 b.getPtrTy(), b.getPtrTy());
  Constant *format = waitMessage(b);
  Type *argTypes = StructType::get(b.getInt32Ty(), b.getInt32Ty(),
                                   b.getInt32Ty(), b.getInt32Ty());
  Value *args = entryAlloca(b, argTypes, "wait.message.args", 4);
  Value *fields[] = {
      b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}),
      b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_tid_x, {}), parity,
      address};
  for (unsigned i = 0; i < 4; ++i)
    b.CreateStore(fields[i], b.CreateStructGEP(argTypes, args, i));
  b.CreateCall(vprintf, {format, args});
  b.CreateIntrinsic(Intrinsic::trap, {});
  b.CreateUnreachable();
}

// try_wait suspends for a while inside the instruction before it answers
// false, so the loop around it spins slowly. The bounded wait reads the
// global timer (ns) once per failed try.
void fmhajit::emitMbarrierWait(IRBuilderBase &b, Value *bar, Value *parity,
                               bool bounded) {
  Value *address = sharedAddress(b, bar);
  Function *fn = b.GetInsertBlock()->getParent();
  auto timer = [&] {
    return b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_globaltimer, {});
  };
  Value *start = bounded ? timer() : nullptr;
  BasicBlock *spin = BasicBlock::Create(b.getContext(), "mbar.wait", fn);
  BasicBlock *done = BasicBlock::Create(b.getContext(), "mbar.done", fn);
  b.CreateBr(spin);
  b.SetInsertPoint(spin);
  Value *ready = ptx(b, b.getInt32Ty(),
                     "{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n\t"
                     "selp.u32 $0, 1, 0, p;\n\t}",
                     "=r,r,r", {address, parity});
  Value *isReady = b.CreateICmpNE(ready, b.getInt32(0));
  if (!bounded) {
    b.CreateCondBr(isReady, done, spin);
    b.SetInsertPoint(done);
    return;
  }
  BasicBlock *check = BasicBlock::Create(b.getContext(), "mbar.check", fn);
  BasicBlock *giveUp = BasicBlock::Create(b.getContext(), "mbar.give.up", fn);
  b.CreateCondBr(isReady, done, check);
  b.SetInsertPoint(check);
  Value *waited = b.CreateSub(timer(), start);
  b.CreateCondBr(
      b.CreateICmpUGT(waited, b.getInt64(kBoundedWaitSeconds * 1000000000ull)),
      giveUp, spin);
  b.SetInsertPoint(giveUp);
  emitGiveUp(b, parity, address);
  b.SetInsertPoint(done);
}

void fmhajit::emitTmaLoad(IRBuilderBase &b, Value *dst, Value *map,
                          ArrayRef<Value *> coords, Value *bar) {
  assert(coords.size() == 4 && "fmhajit's tensor maps have four dimensions");
  ptx(b, nullptr,
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::"
      "complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6];",
      "r,l,r,r,r,r,r",
      {sharedAddress(b, dst), b.CreatePtrToInt(map, b.getInt64Ty()), coords[0],
       coords[1], coords[2], coords[3], sharedAddress(b, bar)});
}

TmaRing::TmaRing(IRBuilderBase &b, GpuTargetInfo &target,
                 const WgmmaLayout &layout, Value *smem)
    : b(b), layout(layout), stages(target.kernelSpec().stages), smem(smem),
      counters(target.ringCounters) {
  assert(counters && "the target sets the ring's counters before the roles");
}

static constexpr unsigned kRingCounters = 4;
static constexpr unsigned kTailCounter = 3;

Value *TmaRing::emitCounters(IRBuilderBase &b) {
  auto *type = ArrayType::get(b.getInt32Ty(), kRingCounters);
  Value *counters = entryAlloca(b, type, "ring.loads");
  b.CreateStore(ConstantAggregateZero::get(type), counters);
  return counters;
}

Value *TmaRing::counter(TileRole role) {
  unsigned index = role == TileRole::Query ? 0 : role == TileRole::KeyT ? 1 : 2;
  return b.CreateConstInBoundsGEP2_32(
      ArrayType::get(b.getInt32Ty(), kRingCounters), counters, 0, index);
}

// Barriers 0 and 1 are Q's full and empty; slot s of K has full 2 + s and
// empty 2 + stages + s, V the two groups after, and under fp8 staged V the
// two after those, and under loadsPagedBoxes the tail barrier last. The
// empty barriers of K and V count the consumer
// warpgroups, Q's the consumer warps (NvptxWgmmaTileOps' release); every
// other one takes a single arrival (the producer's expect_tx, or the
// transposers' leader).
void TmaRing::emitInit(IRBuilderBase &b, GpuTargetInfo &target) {
  const KernelSpec &spec = target.kernelSpec();
  WgmmaLayout layout(spec, *findArch(spec.target));
  Value *smem = target.sharedMemory(b, layout.bytes());
  unsigned stages = spec.stages;
  emitIf(b, b.CreateICmpEQ(target.threadId(b), b.getInt32(0)), "mbar.init",
         [&] {
           for (unsigned i = 0; i < layout.barrierCount(); ++i) {
             unsigned group = i < 2 ? 0 : (i - 2) / stages;
             bool consumers = i >= 2 && (group == 1 || group == 3);
             unsigned count = i == 1 ? spec.warps
                              : consumers
                                  ? spec.warps / WgmmaLayout::kWarpsPerGroup
                                  : 1;
             emitMbarrierInit(
                 b,
                 b.CreateConstInBoundsGEP1_32(b.getInt8Ty(), smem,
                                              layout.barrierOffset() + 8 * i),
                 count);
           }
           emitMbarrierInitFence(b);
         });
  target.barrier(b);
}

TmaRing::Use TmaRing::useOf(Value *n, unsigned slots) {
  Value *size = b.getInt32(slots);
  return {b.CreateURem(n, size),
          b.CreateAnd(b.CreateUDiv(n, size), b.getInt32(1))};
}

TmaRing::Use TmaRing::next(TileRole role) {
  Value *count = counter(role);
  Value *n = b.CreateLoad(b.getInt32Ty(), count);
  b.CreateStore(b.CreateAdd(n, b.getInt32(1)), count);
  return useOf(n, role == TileRole::Query ? 1 : stages);
}

TmaRing::Use TmaRing::latest(TileRole role) {
  Value *n = b.CreateLoad(b.getInt32Ty(), counter(role));
  return useOf(b.CreateSub(n, b.getInt32(1)),
               role == TileRole::Query ? 1 : stages);
}

Value *TmaRing::barrier(Value *index) {
  Value *offset = b.CreateAdd(b.getInt32(layout.barrierOffset()),
                              b.CreateMul(index, b.getInt32(8)));
  return b.CreateInBoundsGEP(b.getInt8Ty(), smem, offset);
}

Value *TmaRing::full(TileRole role, Value *slot) {
  if (role == TileRole::Query)
    return barrier(b.getInt32(0));
  unsigned first = role == TileRole::KeyT ? 2 : 2 + 2 * stages;
  return barrier(b.CreateAdd(b.getInt32(first), slot));
}

Value *TmaRing::empty(TileRole role, Value *slot) {
  if (role == TileRole::Query)
    return barrier(b.getInt32(1));
  unsigned first = role == TileRole::KeyT ? 2 + stages : 2 + 3 * stages;
  return barrier(b.CreateAdd(b.getInt32(first), slot));
}

Value *TmaRing::stagedFull(Value *slot) {
  return barrier(b.CreateAdd(b.getInt32(2 + 4 * stages), slot));
}

Value *TmaRing::stagedEmpty(Value *slot) {
  return barrier(b.CreateAdd(b.getInt32(2 + 5 * stages), slot));
}

// The last barrier, after every slot's.
Value *TmaRing::tail() {
  return barrier(b.getInt32(layout.barrierCount() - 1));
}

Value *TmaRing::nextTailParity() {
  Value *count = b.CreateConstInBoundsGEP2_32(
      ArrayType::get(b.getInt32Ty(), kRingCounters), counters, 0, kTailCounter);
  Value *n = b.CreateLoad(b.getInt32Ty(), count);
  b.CreateStore(b.CreateAdd(n, b.getInt32(1)), count);
  return b.CreateAnd(n, b.getInt32(1));
}

Value *TmaRing::stagedAddress(Value *slot) {
  Value *offset =
      b.CreateAdd(b.getInt32(layout.stagedValues.offset),
                  b.CreateMul(slot, b.getInt32(layout.stageBytes())));
  return b.CreateInBoundsGEP(b.getInt8Ty(), smem, offset);
}

Value *TmaRing::slotAddress(const Tile &tile, Value *slot) {
  if (!slot)
    return tile.storage;
  return b.CreateInBoundsGEP(
      b.getInt8Ty(), tile.storage,
      b.CreateMul(slot, b.getInt32(layout.stageBytes())));
}

// A warpgroup owns its 64 rows of every tile, so it counts its own arrivals
// at a split tail item (counter w of the item) and needs no other
// warpgroup: its warps meet once each has stored its rows' partials, one
// thread adds to the counter at the device's scope (the release of the
// warpgroup's partials, and the acquire of the other parts' where it was
// the last), and the barrier's OR hands that thread's answer to all 128:
//   bar.sync 9+w, 128
//   @first atom.acq_rel.gpu.add.u32 old, [counters + 4w], 1
//   bar.red.or.pred last, 9+w, 128, first && old == parts - 1
Value *fmhajit::emitWarpgroupArrival(IRBuilderBase &b, GpuTargetInfo &target,
                                     Value *counters, Value *parts) {
  Value *group = b.CreateLShr(target.threadId(b), b.getInt32(7));
  Value *barrier = b.CreateAdd(group, b.getInt32(kTailBarrier));
  Value *threads = b.getInt32(WgmmaLayout::kWarpsPerGroup * 32);
  b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_sync_aligned_count,
                    {barrier, threads});
  Value *first = b.CreateICmpEQ(
      b.CreateAnd(target.threadId(b),
                  b.getInt32(WgmmaLayout::kWarpsPerGroup * 32 - 1)),
      b.getInt32(0), "tail.first");
  AllocaInst *arrived = entryAlloca(b, b.getInt32Ty(), "tail.arrived");
  b.CreateStore(b.getInt32(0), arrived);
  emitIf(b, first, "tail.count", [&] {
    Value *counter = b.CreateInBoundsGEP(b.getInt32Ty(), counters, group);
    // Inline: LLVM 22's NVPTX lowers an acq_rel atomicrmw to a plain
    // (relaxed) atom, with no fence on either side.
    auto *type = FunctionType::get(b.getInt32Ty(), {counter->getType()}, false);
    Value *old = b.CreateCall(
        InlineAsm::get(type, "atom.acq_rel.gpu.add.u32 $0, [$1], 1;",
                       "=r,l,~{memory}", /*hasSideEffects=*/true),
        {counter});
    b.CreateStore(b.CreateAdd(old, b.getInt32(1)), arrived);
  });
  Value *last = b.CreateICmpEQ(b.CreateLoad(b.getInt32Ty(), arrived), parts);
  return b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_red_or_aligned_count,
                           {barrier, threads, last}, nullptr, "tail.last");
}
