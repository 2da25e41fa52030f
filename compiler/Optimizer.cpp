//===- Optimizer.cpp - The pass pipeline ----------------------------------===//
#include "compiler/Optimizer.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"

using namespace llvm;

static constexpr const char *kHostPipeline =
    "function(sroa,early-cse,instcombine,simplifycfg,loop(loop-rotate),"
    "loop-mssa(licm),gvn,instcombine,loop-unroll-full,simplifycfg,"
    "loop-vectorize,instcombine,simplifycfg)";

// LLVM 22's -O3 module pipeline for NVPTX with the passes that changed no
// kernel's PTX taken out, in -O3's order and with its options: 39 of its
// 113 passes. Out went the SLP and loop vectorizers, jump threading, DSE,
// the attribute, OpenMP and coroutine passes, loop idiom/deletion/unswitch,
// and a third of the instcombine and simplifycfg runs. Measured on every
// NVPTX kernel of the profiles: the PTX is byte for byte -O3's, in about
// three quarters of its time (docs/design.md, "Cold JIT").
static constexpr const char *kNvptxPipeline =
    // module simplification
    "function(nvvm-intr-range),function(simplifycfg,sroa<modify-cfg>,"
    "early-cse),ipsccp,function(instcombine<no-verify-fixpoint>,"
    "simplifycfg<switch-range-to-icmp>),"
    // inlining (variants), then the function simplification
    "always-inline,cgscc(inline),"
    "function(sroa<modify-cfg>,early-cse<memssa>,"
    "speculative-execution<only-if-divergent-target>,correlated-propagation,"
    "instcombine<no-verify-fixpoint>,simplifycfg<switch-range-to-icmp>,"
    "reassociate,loop-mssa(loop-instsimplify,licm<no-allowspeculation>,"
    "loop-rotate<header-duplication;no-prepare-for-lto>,"
    "licm<allowspeculation>),simplifycfg<switch-range-to-icmp>,"
    "instcombine<no-verify-fixpoint>,loop(indvars,loop-unroll-full<O3>),"
    "gvn,sccp,bdce,instcombine<no-verify-fixpoint>,correlated-propagation,"
    "loop-mssa(licm<allowspeculation>)),"
    // the late function passes, then dead globals
    "function(simplifycfg<forward-switch-cond;switch-range-to-icmp;"
    "switch-to-arithmetic;switch-to-lookup;no-keep-loops;hoist-common-insts;"
    "sink-common-insts>,vector-combine,loop-unroll<O3>,infer-alignment,"
    "instcombine<no-verify-fixpoint>,loop-mssa(licm<allowspeculation>),"
    "div-rem-pairs,simplifycfg<switch-range-to-icmp;switch-to-arithmetic;"
    "hoist-loads-stores-with-cond-faulting;speculate-unpredictables>),"
    "globaldce";

// The text "loop-unroll-full" takes no level and unrolls up to -O2's
// threshold; -O3's full unroll (its threshold twice that) is
// "loop-unroll-full<O3>" here.
static void registerFullUnrollAtO3(PassBuilder &pb) {
  pb.registerPipelineParsingCallback(
      [](StringRef name, LoopPassManager &lpm,
         ArrayRef<PassBuilder::PipelineElement>) {
        if (name != "loop-unroll-full<O3>")
          return false;
        lpm.addPass(LoopFullUnrollPass(/*OptLevel=*/3));
        return true;
      });
}

static ModulePassManager buildPipeline(PassBuilder &pb, const Triple &triple) {
  ModulePassManager mpm;
  // The host forward recipe's IR is already vectorized and register-
  // blocked: it needs promotion, cleanup and hoisting, not all of -O3; the
  // loop vectorizer stays for the small helper kernels (split-KV combine,
  // append) written as scalar loops. Measured on fp32/bf16 d=64/128 kernels:
  // about half the cold compile time of -O3 (~90 vs ~170 ms), the same or
  // better throughput.
  if (triple.isX86())
    cantFail(pb.parsePassPipeline(mpm, kHostPipeline));
  else if (triple.isNVPTX())
    cantFail(pb.parsePassPipeline(mpm, kNvptxPipeline));
  else
    mpm = pb.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  return mpm;
}

void fmhajit::optimizeModule(Module &m, TargetMachine &tm) {
  m.setTargetTriple(tm.getTargetTriple());
  m.setDataLayout(tm.createDataLayout());
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder pb(&tm);
  registerFullUnrollAtO3(pb);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  buildPipeline(pb, tm.getTargetTriple()).run(m, mam);
}
