//===- NvptxTimeline.cpp - Clock stamps of block 0's warpgroups -----------===//
#include "ir/targets/NvptxTimeline.h"
#include "ir/Loops.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"

using namespace fmhajit;
using namespace llvm;

static GlobalVariable *timelineGlobal(Module &m) {
  if (GlobalVariable *g = m.getGlobalVariable(kTimelineGlobal))
    return g;
  auto *type = ArrayType::get(Type::getInt64Ty(m.getContext()),
                              kTimelineEvents * kTimelineGroups);
  return new GlobalVariable(m, type, false, GlobalValue::ExternalLinkage,
                            ConstantAggregateZero::get(type), kTimelineGlobal,
                            nullptr, GlobalValue::NotThreadLocal, 1);
}

Value *fmhajit::timelineCounter(Function &fn) {
  IRBuilder<> entry(&*fn.getEntryBlock().getFirstInsertionPt());
  Value *counter = entry.CreateAlloca(entry.getInt32Ty(), nullptr, "stamps");
  entry.CreateStore(entry.getInt32(0), counter);
  return counter;
}

void fmhajit::emitTimelineStamp(IRBuilderBase &b, Value *counter, Value *group,
                                TimelineEvent event) {
  Module &m = *b.GetInsertBlock()->getModule();
  Value *thread = b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_tid_x, {});
  Value *block = b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {});
  Value *n = b.CreateLoad(b.getInt32Ty(), counter);
  Value *stamps = b.CreateAnd(
      b.CreateAnd(
          b.CreateICmpEQ(block, b.getInt32(0)),
          b.CreateICmpEQ(b.CreateAnd(thread, b.getInt32(127)), b.getInt32(0))),
      b.CreateICmpULT(n, b.getInt32(kTimelineEvents)));
  emitIf(b, stamps, "stamp", [&] {
    Value *clock = b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_clock64, {});
    Value *word = b.CreateOr(
        b.CreateOr(b.CreateShl(b.CreateZExt(group, b.getInt64Ty()), 56),
                   b.getInt64(uint64_t(event) << 48)),
        b.CreateAnd(clock, b.getInt64((uint64_t(1) << 48) - 1)));
    Value *slot =
        b.CreateAdd(b.CreateMul(group, b.getInt32(kTimelineEvents)), n);
    b.CreateStore(word,
                  b.CreateInBoundsGEP(b.getInt64Ty(), timelineGlobal(m),
                                      b.CreateZExt(slot, b.getInt64Ty())));
    b.CreateStore(b.CreateAdd(n, b.getInt32(1)), counter);
  });
}

void fmhajit::emitBlockTimeStamp(IRBuilderBase &b, BlockEvent event) {
  Module &m = *b.GetInsertBlock()->getModule();
  GlobalVariable *times = m.getGlobalVariable(kBlockTimesGlobal);
  if (!times) {
    auto *type = ArrayType::get(b.getInt64Ty(), 2 * kBlockTimesBlocks);
    times =
        new GlobalVariable(m, type, false, GlobalValue::ExternalLinkage,
                           ConstantAggregateZero::get(type), kBlockTimesGlobal,
                           nullptr, GlobalValue::NotThreadLocal, 1);
  }
  Value *thread = b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_tid_x, {});
  Value *block = b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {});
  Value *stamps =
      b.CreateAnd(b.CreateICmpEQ(thread, b.getInt32(0)),
                  b.CreateICmpULT(block, b.getInt32(kBlockTimesBlocks)));
  emitIf(b, stamps, "block.time", [&] {
    Value *now =
        b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_globaltimer, {});
    Value *slot = b.CreateAdd(b.CreateMul(block, b.getInt32(2)),
                              b.getInt32(unsigned(event)));
    b.CreateStore(now, b.CreateInBoundsGEP(b.getInt64Ty(), times,
                                           b.CreateZExt(slot, b.getInt64Ty())));
  });
}
