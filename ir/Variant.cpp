//===- Variant.cpp - The seam between the recipe and a user's variant -----===//
#include "ir/Variant.h"
#include "ir/VariantLanes.h"
#include "specs/Errors.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace fmhajit;
using namespace llvm;

FunctionType *fmhajit::scoreModType(LLVMContext &ctx) {
  Type *i32 = Type::getInt32Ty(ctx), *tensors = PointerType::get(ctx, 0);
  return FunctionType::get(Type::getFloatTy(ctx),
                           {Type::getFloatTy(ctx), i32, i32, i32, i32, tensors},
                           false);
}

FunctionType *fmhajit::maskModType(LLVMContext &ctx) {
  Type *i32 = Type::getInt32Ty(ctx), *tensors = PointerType::get(ctx, 0);
  return FunctionType::get(Type::getInt1Ty(ctx), {i32, i32, i32, i32, tensors},
                           false);
}

static Function *defined(const Module &m, StringRef name) {
  Function *fn = m.getFunction(name);
  return fn && !fn->isDeclaration() ? fn : nullptr;
}

Function *fmhajit::findScoreMod(const Module &m) {
  return defined(m, kScoreModSymbol);
}
Function *fmhajit::findMaskMod(const Module &m) {
  return defined(m, kMaskModSymbol);
}

// Every return is `score + t`, `t + score` or `score - t`, and no t reads
// the score: the variant's own optimizations leave that shape.
bool fmhajit::addsToItsScore(const Function &scoreMod) {
  const Argument *score = scoreMod.getArg(0);
  auto readsScore = [&](const Value *root) {
    SmallVector<const Value *, 16> work{root};
    SmallPtrSet<const Value *, 16> seen;
    while (!work.empty()) {
      const Value *v = work.pop_back_val();
      if (v == score)
        return true;
      if (const auto *inst = dyn_cast<Instruction>(v);
          inst && seen.insert(v).second)
        append_range(work, inst->operands());
    }
    return false;
  };
  bool anyReturn = false;
  for (const BasicBlock &block : scoreMod)
    if (const auto *ret = dyn_cast<ReturnInst>(block.getTerminator())) {
      const auto *op = dyn_cast_or_null<BinaryOperator>(ret->getReturnValue());
      if (!op)
        return false;
      const Value *lhs = op->getOperand(0), *rhs = op->getOperand(1);
      const Value *term = nullptr;
      if (op->getOpcode() == Instruction::FSub && lhs == score)
        term = rhs;
      else if (op->getOpcode() == Instruction::FAdd)
        term = lhs == score ? rhs : rhs == score ? lhs : nullptr;
      if (!term || readsScore(term))
        return false;
      anyReturn = true;
    }
  return anyReturn;
}

Error fmhajit::linkVariant(Module &kernel, std::unique_ptr<Module> variant) {
  LLVMContext &ctx = kernel.getContext();
  for (auto [name, type] : {std::pair{kScoreModSymbol, scoreModType(ctx)},
                            std::pair{kMaskModSymbol, maskModType(ctx)}}) {
    Function *fn = defined(*variant, name);
    if (fn && fn->getFunctionType() != type)
      return makeError(ErrorKind::Jit, "internal error: variant function " +
                                           Twine(name) + " has the wrong type");
  }
  // The kernel module takes its triple and layout later (compiler/); the
  // variant was compiled for the same target.
  variant->setTargetTriple(kernel.getTargetTriple());
  variant->setDataLayout(kernel.getDataLayout());
  if (Linker::linkModules(kernel, std::move(variant)))
    return makeError(ErrorKind::Jit, "internal error: the variant's module "
                                     "does not link into the kernel's");
  for (Function *fn : {findScoreMod(kernel), findMaskMod(kernel)})
    if (fn)
      fn->setLinkage(GlobalValue::InternalLinkage);
  return Error::success();
}

Value *fmhajit::callPerLane(IRBuilderBase &b, Function *fn,
                            ArrayRef<Value *> args) {
  auto *vec = dyn_cast<FixedVectorType>(args.front()->getType());
  if (!vec)
    return b.CreateCall(fn, args);
  unsigned lanes = vec->getNumElements();
  if (Function *lanesFn = laneVersion(*fn, lanes)) {
    SmallVector<Value *, 6> wide;
    for (Value *arg : args)
      wide.push_back(arg->getType()->isVectorTy() ||
                             arg->getType()->isPointerTy()
                         ? arg
                         : b.CreateVectorSplat(lanes, arg));
    return b.CreateCall(lanesFn, wide);
  }
  Type *resultType = FixedVectorType::get(fn->getReturnType(), lanes);
  Value *result = PoisonValue::get(resultType);
  SmallVector<Value *, 6> lane(args.size());
  for (unsigned i = 0; i < lanes; ++i) {
    for (auto [to, from] : zip(lane, args))
      to = from->getType()->isVectorTy() ? b.CreateExtractElement(from, i)
                                         : from;
    result = b.CreateInsertElement(result, b.CreateCall(fn, lane), i);
  }
  return result;
}

// exp(x) = 2^(x log2 e) and log(x) = log2(x) ln 2: the targets' exp2 and
// log2 words, as the softmax and the LSE use them.
static Value *lowerMathCall(IRBuilderBase &b, IntrinsicInst &call,
                            TargetInfo &target) {
  Value *x = call.arg_size() > 0 ? call.getArgOperand(0) : nullptr;
  switch (call.getIntrinsicID()) {
  case Intrinsic::exp:
    return target.exp2(b,
                       b.CreateFMul(x, ConstantFP::get(x->getType(), kLog2e)));
  case Intrinsic::exp2:
    return target.exp2(b, x);
  case Intrinsic::tanh:
    return target.tanh(b, x);
  case Intrinsic::log2: // NVPTX has no library call for llvm.log2.f32
    return target.log2(b, x);
  case Intrinsic::log:
    return b.CreateFMul(target.log2(b, x), ConstantFP::get(x->getType(), kLn2));
  default:
    return nullptr; // the backends lower the rest of the allowed set
  }
}

static void lowerMath(Function &fn, TargetInfo &target) {
  SmallVector<IntrinsicInst *, 8> calls;
  for (Instruction &inst : instructions(fn))
    if (auto *call = dyn_cast<IntrinsicInst>(&inst))
      calls.push_back(call);
  for (IntrinsicInst *call : calls) {
    IRBuilder<> b(call);
    if (Value *lowered = lowerMathCall(b, *call, target)) {
      call->replaceAllUsesWith(lowered);
      call->eraseFromParent();
    }
  }
}

void fmhajit::inlineVariant(Module &kernel, TargetInfo &target) {
  SmallVector<Function *, 4> variantFns;
  for (Function &fn : kernel)
    if (isLaneVersion(fn))
      variantFns.push_back(&fn);
  for (Function *fn : {findScoreMod(kernel), findMaskMod(kernel)})
    if (fn)
      variantFns.push_back(fn);
  for (Function *fn : variantFns) {
    lowerMath(*fn, target);
    SmallVector<CallBase *, 16> calls;
    for (User *user : fn->users())
      if (auto *call = dyn_cast<CallBase>(user))
        calls.push_back(call);
    for (CallBase *call : calls) {
      InlineFunctionInfo info;
      InlineResult inlined = InlineFunction(*call, info);
      assert(inlined.isSuccess() && "variant functions are plain code");
      (void)inlined;
    }
    if (fn->use_empty())
      fn->eraseFromParent();
  }
}
