//===- VariantLanes.cpp - A variant function widened to vector lanes ------===//
#include "ir/VariantLanes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Analysis/VectorUtils.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include <optional>

using namespace fmhajit;
using namespace llvm;

static constexpr const char *kLaneVersionAttr = "fmhajit-variant-lanes";

namespace {
/// Rewrites one straight block of scalar code as code on \p lanes lanes.
class Widener {
public:
  Widener(IRBuilderBase &b, unsigned lanes) : b(b), lanes(lanes) {}

  /// Maps a scalar parameter to the vector (or, for pointers, the scalar)
  /// that stands for it.
  void bind(Value *scalar, Value *widened) { map[scalar] = widened; }

  /// Emits \p inst's vector form; false where there is none to emit.
  bool widen(Instruction &inst) {
    if (auto *ret = dyn_cast<ReturnInst>(&inst)) {
      b.CreateRet(vectorOf(ret->getReturnValue()));
      return true;
    }
    if (Value *v = vectorForm(inst)) {
      if (auto *out = dyn_cast<Instruction>(v); out && isa<FPMathOperator>(out))
        out->copyFastMathFlags(&inst);
      map[&inst] = v;
      return true;
    }
    return widenLaneByLane(inst);
  }

private:
  /// Whether \p v is one value for every lane: a constant, or a scalar
  /// that stands for it (the tensor table and what is read from it alone).
  bool isUniform(Value *v) const {
    if (isa<Constant>(v))
      return true;
    auto it = map.find(v);
    return it != map.end() && !it->second->getType()->isVectorTy();
  }

  /// \p v's uniform value in the new function.
  Value *scalarOf(Value *v) const {
    return isa<Constant>(v) ? v : map.lookup(v);
  }

  /// The vector that stands for scalar \p v: a splat of a constant or a
  /// uniform pointer's value, or what widen() made of it.
  Value *vectorOf(Value *v) {
    if (auto it = map.find(v); it != map.end())
      return it->second->getType()->isVectorTy()
                 ? it->second
                 : b.CreateVectorSplat(lanes, it->second);
    return b.CreateVectorSplat(lanes, v);
  }

  Type *widened(Type *t) { return FixedVectorType::get(t, lanes); }

  Value *vectorForm(Instruction &inst) {
    if (auto *op = dyn_cast<BinaryOperator>(&inst)) {
      Value *v = b.CreateBinOp(op->getOpcode(), vectorOf(op->getOperand(0)),
                               vectorOf(op->getOperand(1)));
      if (auto *out = dyn_cast<Instruction>(v))
        out->copyIRFlags(op);
      return v;
    }
    if (auto *op = dyn_cast<UnaryOperator>(&inst))
      return b.CreateUnOp(op->getOpcode(), vectorOf(op->getOperand(0)));
    if (auto *cmp = dyn_cast<CmpInst>(&inst))
      return b.CreateCmp(cmp->getPredicate(), vectorOf(cmp->getOperand(0)),
                         vectorOf(cmp->getOperand(1)));
    if (auto *select = dyn_cast<SelectInst>(&inst))
      return b.CreateSelect(vectorOf(select->getCondition()),
                            vectorOf(select->getTrueValue()),
                            vectorOf(select->getFalseValue()));
    if (auto *cast = dyn_cast<CastInst>(&inst);
        cast && !cast->getSrcTy()->isPointerTy() &&
        !cast->getDestTy()->isPointerTy())
      return b.CreateCast(cast->getOpcode(), vectorOf(cast->getOperand(0)),
                          widened(cast->getDestTy()));
    if (auto *call = dyn_cast<IntrinsicInst>(&inst))
      return vectorIntrinsic(*call);
    return nullptr;
  }

  Value *vectorIntrinsic(IntrinsicInst &call) {
    Intrinsic::ID id = call.getIntrinsicID();
    if (!isTriviallyVectorizable(id))
      return nullptr;
    SmallVector<Value *, 4> args;
    for (auto [i, arg] : enumerate(call.args())) {
      bool scalarOperand = isVectorIntrinsicWithScalarOpAtArg(id, i, nullptr);
      if (scalarOperand && !isUniform(arg))
        return nullptr; // a lane-varying operand the vector form takes once
      args.push_back(scalarOperand ? scalarOf(arg) : vectorOf(arg));
    }
    return b.CreateIntrinsic(widened(call.getType()), id, args);
  }

  /// \p inst once per lane, on each lane's operands, its results gathered
  /// into a vector (a tensor read's address and load), or once where every
  /// operand is uniform (the tensor table's fields).
  bool widenLaneByLane(Instruction &inst) {
    Type *type = inst.getType();
    if (!type->isIntOrPtrTy() && !type->isFloatingPointTy())
      return false;
    auto copyFor = [&](std::optional<unsigned> lane) {
      Instruction *copy = inst.clone();
      for (Use &op : copy->operands())
        op.set(isUniform(op.get())
                   ? scalarOf(op.get())
                   : b.CreateExtractElement(vectorOf(op.get()), *lane));
      return b.Insert(copy);
    };
    if (all_of(inst.operands(), [&](Use &op) { return isUniform(op.get()); })) {
      map[&inst] = copyFor(std::nullopt);
      return true;
    }
    Value *gathered = PoisonValue::get(widened(type));
    for (unsigned lane = 0; lane < lanes; ++lane)
      gathered = b.CreateInsertElement(gathered, copyFor(lane), lane);
    map[&inst] = gathered;
    return true;
  }

  IRBuilderBase &b;
  unsigned lanes;
  DenseMap<Value *, Value *> map;
};
} // namespace

Function *fmhajit::laneVersion(Function &fn, unsigned lanes) {
  Module &m = *fn.getParent();
  std::string name = (fn.getName() + ".lanes" + Twine(lanes)).str();
  if (Function *made = m.getFunction(name))
    return made;
  if (fn.size() != 1)
    return nullptr;
  auto widen = [&](Type *t) -> Type * {
    return t->isPointerTy() ? t : FixedVectorType::get(t, lanes);
  };
  SmallVector<Type *, 6> params;
  for (Type *t : fn.getFunctionType()->params())
    params.push_back(widen(t));
  auto *type =
      FunctionType::get(widen(fn.getReturnType()), params, /*isVarArg=*/false);
  Function *lanesFn =
      Function::Create(type, GlobalValue::InternalLinkage, name, m);
  lanesFn->copyAttributesFrom(&fn);
  lanesFn->setAttributes(AttributeList::get(
      fn.getContext(), AttributeList::FunctionIndex,
      AttrBuilder(fn.getContext(), fn.getAttributes().getFnAttrs())));
  lanesFn->addFnAttr(kLaneVersionAttr);
  IRBuilder<> b(BasicBlock::Create(fn.getContext(), "entry", lanesFn));
  Widener widener(b, lanes);
  for (auto [scalar, vector] : zip(fn.args(), lanesFn->args()))
    widener.bind(&scalar, &vector);
  for (Instruction &inst : fn.getEntryBlock())
    if (!widener.widen(inst)) {
      lanesFn->eraseFromParent();
      return nullptr;
    }
  return lanesFn;
}

bool fmhajit::isLaneVersion(const Function &fn) {
  return fn.hasFnAttribute(kLaneVersionAttr);
}
