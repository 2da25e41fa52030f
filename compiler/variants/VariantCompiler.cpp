//===- VariantCompiler.cpp - A variant's source to a checked module -------===//
#include "compiler/variants/VariantCompiler.h"
#include "compiler/TargetMachines.h"
#include "compiler/variants/VariantChecks.h"
#include "compiler/variants/VariantFrontend.h"
#include "ir/Variant.h"
#include "ir/VariantTensorReads.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace fmhajit;
using namespace llvm;

VariantHash fmhajit::hashVariant(StringRef text) {
  return {utohexstr(xxh3_64bits(text), /*LowerCase=*/true, kVariantHashDigits)};
}

std::string fmhajit::variantTriple(const ArchInfo &arch) {
  return codegenTarget(arch).triple;
}

// Helpers are inlined into the entry points until no call to a defined
// function is left (checkVariantSource refused recursion, so this ends),
// then deleted: the module holds the entry points alone.
static void inlineHelpers(Module &m) {
  for (bool changed = true; changed;) {
    changed = false;
    SmallVector<CallBase *, 8> calls;
    for (Function &fn : m)
      for (User *user : fn.users())
        if (auto *call = dyn_cast<CallBase>(user); call && !fn.isDeclaration())
          calls.push_back(call);
    for (CallBase *call : calls) {
      InlineFunctionInfo info;
      changed |= InlineFunction(*call, info).isSuccess();
    }
  }
  SmallVector<Function *, 8> dead;
  for (Function &fn : m)
    if (!fn.isDeclaration() && fn.getName() != kScoreModSymbol &&
        fn.getName() != kMaskModSymbol)
      dead.push_back(&fn);
  for (Function *fn : dead)
    if (fn->use_empty())
      fn->eraseFromParent();
}

// The entry point ir/ calls: \p symbol of \p type, the user's arguments
// and the tensor table, calling the user's function (inlineHelpers inlines
// it). It takes the user's attributes (bool's zeroext return, which the
// host's callers rely on) but not clang's for its own target choices (cpu,
// features) or the -O0-style ones, which would keep it from matching the
// kernel's.
static void makeEntry(Function *user, FunctionType *type, StringRef symbol) {
  if (!user)
    return;
  Function *entry = Function::Create(type, GlobalValue::ExternalLinkage, symbol,
                                     user->getParent());
  entry->copyAttributesFrom(user);
  for (StringRef attr : {"target-cpu", "target-features", "tune-cpu"})
    entry->removeFnAttr(attr);
  entry->removeFnAttr(Attribute::NoInline);
  entry->removeFnAttr(Attribute::OptimizeNone);
  entry->getArg(type->getNumParams() - 1)->setName("tensors");
  IRBuilder<> b(BasicBlock::Create(entry->getContext(), "entry", entry));
  SmallVector<Value *, 5> args;
  for (unsigned i = 0; i < user->arg_size(); ++i)
    args.push_back(entry->getArg(i));
  b.CreateRet(b.CreateCall(user, args));
}

// fmhajit_tensor reads memory that nothing writes while a kernel runs, and
// its lowering cannot fault: to the optimizer it is a pure function, so
// equal reads merge and reads leave loops and branches.
static void markTensorReadPure(Module &m) {
  Function *read = m.getFunction(kTensorReadSymbol);
  if (!read || !read->isDeclaration())
    return;
  read->setDoesNotAccessMemory();
  read->setDoesNotThrow();
  read->setWillReturn();
  read->setNoSync();
  read->addFnAttr(Attribute::Speculatable);
}

// Every fmhajit_tensor call becomes a bounded load of the table argument;
// then nothing calls the declaration.
static void lowerAllTensorReads(Module &m) {
  for (Function *fn : {findScoreMod(m), findMaskMod(m)})
    if (fn)
      lowerTensorReads(*fn);
  if (Function *read = m.getFunction(kTensorReadSymbol))
    if (read->use_empty())
      read->eraseFromParent();
}

static void optimize(Module &m) {
  LoopAnalysisManager loops;
  FunctionAnalysisManager functions;
  CGSCCAnalysisManager sccs;
  ModuleAnalysisManager modules;
  PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(OptimizationLevel::O2).run(m, modules);
}

Expected<CompiledVariant> fmhajit::compileVariant(const VariantSource &source,
                                                  StringRef triple,
                                                  LLVMContext &ctx) {
  Expected<std::unique_ptr<Module>> m =
      compileVariantSource(source.text, source.file, triple, ctx);
  if (!m)
    return m.takeError();
  Expected<VariantEntries> entries = checkVariantSource(**m, source.file);
  if (!entries)
    return entries.takeError();
  markTensorReadPure(**m);
  makeEntry(entries->scoreMod, scoreModType(ctx), kScoreModSymbol);
  makeEntry(entries->maskMod, maskModType(ctx), kMaskModSymbol);
  inlineHelpers(**m);
  optimize(**m);
  if (Error err = checkVariantCode(**m, source.file))
    return std::move(err);
  Expected<VariantTensorUse> tensors = findTensorReads(**m, source.file);
  if (!tensors)
    return tensors.takeError();
  lowerAllTensorReads(**m);
  return CompiledVariant{std::move(*m), *tensors};
}
