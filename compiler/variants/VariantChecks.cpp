//===- VariantChecks.cpp - What a variant may and may not do --------------===//
#include "compiler/variants/VariantChecks.h"
#include "ir/KernelAbi.h"
#include "ir/Variant.h"
#include "ir/VariantTensorReads.h"
#include "specs/Errors.h"
#include "llvm/ADT/SCCIterator.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Analysis/CallGraph.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

using namespace fmhajit;
using namespace llvm;

namespace {
struct Entry {
  const char *name, *mangled, *signature;
};
const Entry kScoreMod = {"score_mod", "_Z9score_modfiiii",
                         "float score_mod(float score, int b, int h, int q, "
                         "int k)"};
const Entry kMaskMod = {"mask_mod", "_Z8mask_modiiii",
                        "bool mask_mod(int b, int h, int q, int k)"};
} // namespace

StringRef fmhajit::allowedCallNames() {
  return "expf, exp2f, logf, log2f, tanhf, sqrtf, fabsf, floorf, ceilf, "
         "truncf, roundf, rintf, fminf, fmaxf, copysignf, fmaf, abs (and "
         "their std:: float forms), min, max, fmhajit_tensor";
}

static Error refuse(StringRef file, const Twine &what) {
  return makeError(ErrorKind::Spec, "variant " + file + ": " + what);
}

// The user's name of a function: "helper" for _Z6helperi, "ns::f" for
// _ZN2ns1fEf.
static std::string baseName(const Function &fn) {
  std::string text = demangle(fn.getName());
  return text.substr(0, text.find('('));
}

// The type of the function the user writes: the entry point's without its
// last argument, the tensor table (ir/Variant.h).
static FunctionType *userType(FunctionType *entry) {
  return FunctionType::get(entry->getReturnType(), entry->params().drop_back(),
                           false);
}

static Expected<Function *> findEntry(Module &m, const Entry &entry,
                                      FunctionType *type, StringRef file) {
  for (Function &fn : m) {
    if (fn.isDeclaration() || baseName(fn) != entry.name)
      continue;
    bool named = fn.getName() == entry.mangled || fn.getName() == entry.name;
    if (named && fn.getFunctionType() == type)
      return &fn;
    return refuse(file, Twine(entry.name) + " must be `" + entry.signature +
                            "`; found `" + demangle(fn.getName()) + "`");
  }
  return nullptr;
}

static bool isAllowedIntrinsic(const Function &fn) {
  switch (fn.getIntrinsicID()) {
  case Intrinsic::smin:
  case Intrinsic::smax:
  case Intrinsic::umin:
  case Intrinsic::umax:
  case Intrinsic::abs:
  case Intrinsic::lifetime_start: // clang's bookkeeping of locals
  case Intrinsic::lifetime_end:
  case Intrinsic::assume:
  case Intrinsic::memset: // a local array's initializer; checkVariantCode
  case Intrinsic::memcpy: // refuses what the optimizer leaves in memory
    return true;
  case Intrinsic::exp:
  case Intrinsic::exp2:
  case Intrinsic::log:
  case Intrinsic::log2:
  case Intrinsic::tanh:
  case Intrinsic::sqrt:
  case Intrinsic::fabs:
  case Intrinsic::floor:
  case Intrinsic::ceil:
  case Intrinsic::trunc:
  case Intrinsic::round:
  case Intrinsic::rint:
  case Intrinsic::minnum:
  case Intrinsic::maxnum:
  case Intrinsic::copysign:
  case Intrinsic::fma:
  case Intrinsic::fmuladd:
    return fn.getReturnType()->isFloatTy(); // no double math on GPUs
  default:
    return false;
  }
}

bool fmhajit::isTensorRead(const Function &fn) {
  return fn.getName() == kTensorReadSymbol &&
         fn.getFunctionType() == tensorReadType(fn.getContext());
}

static Error checkCalls(const Function &fn, StringRef file) {
  for (const Instruction &inst : instructions(fn)) {
    const auto *call = dyn_cast<CallBase>(&inst);
    if (!call)
      continue;
    const Function *callee = call->getCalledFunction();
    if (!callee)
      return refuse(file, baseName(fn) + " makes an indirect call");
    if (!callee->isDeclaration() || isAllowedIntrinsic(*callee) ||
        isTensorRead(*callee))
      continue;
    std::string name = callee->isIntrinsic() ? callee->getName().str()
                                             : demangle(callee->getName());
    return refuse(
        file, baseName(fn) + " calls " + name +
                  ", which is outside the allowed set: " + allowedCallNames());
  }
  return Error::success();
}

// A cycle in the call graph: a function that calls itself, directly or not.
static Error checkRecursion(Module &m, StringRef file) {
  CallGraph graph(m);
  for (auto scc = scc_begin(&graph); !scc.isAtEnd(); ++scc) {
    const std::vector<CallGraphNode *> &nodes = *scc;
    Function *fn = nodes.front()->getFunction();
    if (fn && (nodes.size() > 1 || scc.hasCycle()))
      return refuse(file, baseName(*fn) +
                              " recurses (a kernel has no stack to spare)");
  }
  return Error::success();
}

Expected<VariantEntries> fmhajit::checkVariantSource(Module &m,
                                                     StringRef file) {
  if (!m.global_empty())
    return refuse(file, "uses the global variable " +
                            demangle(m.globals().begin()->getName()) +
                            " (a variant may only compute from its "
                            "arguments)");
  LLVMContext &ctx = m.getContext();
  Expected<Function *> score =
      findEntry(m, kScoreMod, userType(scoreModType(ctx)), file);
  if (!score)
    return score.takeError();
  Expected<Function *> mask =
      findEntry(m, kMaskMod, userType(maskModType(ctx)), file);
  if (!mask)
    return mask.takeError();
  if (!*score && !*mask)
    return refuse(file, "defines neither score_mod nor mask_mod; write `" +
                            Twine(kScoreMod.signature) + "` or `" +
                            kMaskMod.signature + "` (or both)");
  for (Function &fn : m)
    if (!fn.isDeclaration())
      if (Error err = checkCalls(fn, file))
        return std::move(err);
  if (Error err = checkRecursion(m, file))
    return std::move(err);
  return VariantEntries{*score, *mask};
}

// Integer division traps on x86 for 0 and for INT_MIN / -1.
static bool mayTrap(const BinaryOperator &op) {
  auto *divisor = dyn_cast<ConstantInt>(op.getOperand(1));
  if (!divisor)
    return true;
  bool isSigned = op.getOpcode() == Instruction::SDiv ||
                  op.getOpcode() == Instruction::SRem;
  return divisor->isZero() || (isSigned && divisor->isMinusOne());
}

static Error checkInstruction(const Instruction &inst, StringRef fnName,
                              StringRef file) {
  auto did = [&](const Twine &what) {
    return refuse(file, fnName + " " + what);
  };
  if (inst.mayWriteToMemory() && !isa<AssumeInst>(inst))
    return did("writes memory (a variant may only compute from its "
               "arguments)");
  if (isa<LoadInst>(inst))
    return did("reads memory: keep to values (a local array indexed at run "
               "time stays in memory; compute the value instead)");
  if (isa<IntToPtrInst>(inst) || isa<PtrToIntInst>(inst))
    return did("turns integers into pointers");
  if (const auto *op = dyn_cast<BinaryOperator>(&inst))
    if (op->getOpcode() == Instruction::SDiv ||
        op->getOpcode() == Instruction::UDiv ||
        op->getOpcode() == Instruction::SRem ||
        op->getOpcode() == Instruction::URem)
      if (mayTrap(*op))
        return did("divides integers by a value that may be 0 or -1 (that "
                   "traps): divide by a constant, or use float division");
  return Error::success();
}

// The user's name of a function of the optimized module, whose entry
// points carry ir/Variant.h's symbols.
static std::string userName(const Function &fn) {
  return fn.getName() == kScoreModSymbol  ? "score_mod"
         : fn.getName() == kMaskModSymbol ? "mask_mod"
                                          : baseName(fn);
}

Error fmhajit::checkVariantCode(const Module &m, StringRef file) {
  for (const Function &fn : m) {
    if (fn.isDeclaration())
      continue;
    std::string name = userName(fn);
    for (const Instruction &inst : instructions(fn))
      if (Error err = checkInstruction(inst, name, file))
        return err;
  }
  return Error::success();
}

// The slot of one fmhajit_tensor call as a bit of VariantTensorUse.
static Expected<unsigned> slotBit(const CallBase &call, StringRef fnName,
                                  StringRef file) {
  std::string range = "0 to " + std::to_string(kMaxVariantTensors - 1);
  auto *slot = dyn_cast<ConstantInt>(call.getArgOperand(0));
  if (!slot)
    return refuse(file, fnName +
                            " calls fmhajit_tensor with a slot computed "
                            "at run time: write the slot as a constant (" +
                            range + ")");
  int64_t s = slot->getSExtValue();
  if (s < 0 || s >= int64_t(kMaxVariantTensors))
    return refuse(file, fnName + " reads tensor slot " + Twine(s) +
                            ": slots are " + range);
  return 1u << unsigned(s);
}

Expected<VariantTensorUse> fmhajit::findTensorReads(const Module &m,
                                                    StringRef file) {
  VariantTensorUse use;
  for (const Function &fn : m) {
    bool score = fn.getName() == kScoreModSymbol;
    if (fn.isDeclaration() || (!score && fn.getName() != kMaskModSymbol))
      continue;
    for (const Instruction &inst : instructions(fn)) {
      const auto *call = dyn_cast<CallBase>(&inst);
      if (!call || !call->getCalledFunction() ||
          !isTensorRead(*call->getCalledFunction()))
        continue;
      Expected<unsigned> bit = slotBit(*call, userName(fn), file);
      if (!bit)
        return bit.takeError();
      (score ? use.scoreMod : use.maskMod) |= *bit;
    }
  }
  return use;
}
