//===- NvptxPartialMarks.cpp - Split-KV parts marked as they land ---------===//
#include "ir/targets/NvptxPartialMarks.h"
#include "ir/Loops.h"
#include "ir/TargetInfo.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

static CallInst *ptx(IRBuilderBase &b, Type *ret, StringRef text,
                     StringRef constraints, ArrayRef<Value *> args) {
  SmallVector<Type *, 8> types;
  for (Value *arg : args)
    types.push_back(arg->getType());
  auto *fn =
      InlineAsm::get(FunctionType::get(ret ? ret : b.getVoidTy(), types, false),
                     text, constraints, /*hasSideEffects=*/true);
  return b.CreateCall(fn, args);
}

// Inline: LLVM 22's NVPTX lowers atomic orderings inconsistently (an
// acq_rel atomicrmw became a plain atom, NvptxTma.cpp), and these orderings
// are what makes the partials safe to read.
void fmhajit::emitPublishMark(IRBuilderBase &b, Value *mark, Value *tag) {
  ptx(b, nullptr, "st.release.gpu.b64 [$0], $1;", "l,l,~{memory}", {mark, tag});
}

// printf("...", block, thread), then a trap: the launch fails with the
// message on the process's stdout.
static void emitGiveUp(IRBuilderBase &b) {
  Module &m = *b.GetInsertBlock()->getModule();
  FunctionCallee vprintf = m.getOrInsertFunction("vprintf", b.getInt32Ty(),
                                                 b.getPtrTy(), b.getPtrTy());
  Constant *format = m.getNamedGlobal("fmhajit.marks.message");
  if (!format)
    format = b.CreateGlobalString(
        "fmhajit: block %u thread %u waited " +
            std::to_string(kBoundedWaitSeconds) +
            " s for the split-KV parts it combines to be marked (a split "
            "kernel that does not mark its partials, or another tag); "
            "trapping\n",
        "fmhajit.marks.message");
  Type *argTypes = StructType::get(b.getInt32Ty(), b.getInt32Ty());
  Value *args = entryAlloca(b, argTypes, "marks.message.args", 4);
  b.CreateStore(b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}),
                b.CreateStructGEP(argTypes, args, 0));
  b.CreateStore(b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_tid_x, {}),
                b.CreateStructGEP(argTypes, args, 1));
  b.CreateCall(vprintf, {format, args});
  b.CreateIntrinsic(Intrinsic::trap, {});
  b.CreateUnreachable();
}

// The loads go out together, so a step waits about one L2 round trip once
// its parts are marked, not one per part.
void fmhajit::emitWaitForMarks(IRBuilderBase &b, ArrayRef<Value *> marks,
                               Value *tag, bool bounded) {
  Function *fn = b.GetInsertBlock()->getParent();
  auto timer = [&] {
    return b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_globaltimer, {});
  };
  Value *start = bounded ? timer() : nullptr;
  BasicBlock *spin = BasicBlock::Create(b.getContext(), "marks.read", fn);
  BasicBlock *done = BasicBlock::Create(b.getContext(), "marks.done", fn);
  b.CreateBr(spin);
  b.SetInsertPoint(spin);
  SmallVector<Value *, 8> seen;
  for (Value *mark : marks)
    seen.push_back(ptx(b, b.getInt64Ty(), "ld.relaxed.gpu.b64 $0, [$1];",
                       "=l,l,~{memory}", {mark}));
  Value *all = b.getTrue();
  for (Value *value : seen)
    all = b.CreateAnd(all, b.CreateICmpEQ(value, tag));
  BasicBlock *again = spin;
  if (bounded) {
    again = BasicBlock::Create(b.getContext(), "marks.check", fn);
    BasicBlock *giveUp =
        BasicBlock::Create(b.getContext(), "marks.give.up", fn);
    IRBuilderBase::InsertPointGuard guard(b);
    b.SetInsertPoint(again);
    Value *waited = b.CreateSub(timer(), start);
    b.CreateCondBr(b.CreateICmpUGT(
                       waited, b.getInt64(kBoundedWaitSeconds * 1000000000ull)),
                   giveUp, spin);
    b.SetInsertPoint(giveUp);
    emitGiveUp(b);
  }
  b.CreateCondBr(all, done, again);
  b.SetInsertPoint(done);
  ptx(b, nullptr, "fence.acq_rel.gpu;", "~{memory}", {});
}
