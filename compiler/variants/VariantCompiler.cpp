//===- VariantCompiler.cpp - A variant's source to a checked module -------===//
#include "compiler/variants/VariantCompiler.h"
#include "compiler/TargetMachines.h"
#include "compiler/variants/VariantChecks.h"
#include "compiler/variants/VariantFrontend.h"
#include "ir/Variant.h"
#include "llvm/ADT/StringExtras.h"
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

// clang's attributes for its own target choices (cpu, features) and the
// -O0-style ones would keep the functions from matching the kernel's.
static void prepareEntry(Function *fn, StringRef symbol) {
  if (!fn)
    return;
  fn->setName(symbol);
  fn->setLinkage(GlobalValue::ExternalLinkage);
  for (StringRef attr : {"target-cpu", "target-features", "tune-cpu"})
    fn->removeFnAttr(attr);
  fn->removeFnAttr(Attribute::NoInline);
  fn->removeFnAttr(Attribute::OptimizeNone);
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

Expected<std::unique_ptr<Module>>
fmhajit::compileVariant(const VariantSource &source, StringRef triple,
                        LLVMContext &ctx) {
  Expected<std::unique_ptr<Module>> m =
      compileVariantSource(source.text, source.file, triple, ctx);
  if (!m)
    return m.takeError();
  Expected<VariantEntries> entries = checkVariantSource(**m, source.file);
  if (!entries)
    return entries.takeError();
  prepareEntry(entries->scoreMod, kScoreModSymbol);
  prepareEntry(entries->maskMod, kMaskModSymbol);
  inlineHelpers(**m);
  optimize(**m);
  if (Error err = checkVariantCode(**m, source.file))
    return std::move(err);
  return std::move(*m);
}
