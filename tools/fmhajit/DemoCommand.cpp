//===- DemoCommand.cpp - fmhajit demo: a tour of what fmhajit does --------===//
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tools/fmhajit/Commands.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <vector>

using namespace fmhajit;

// Each spec goes parse -> validate -> name -> decode, as a user's would.
static void showSpec(llvm::StringRef text, llvm::raw_ostream &os) {
  os << "  spec:    " << text << "\n";
  llvm::Expected<KernelSpec> spec = parseSpec(text);
  llvm::Expected<KernelSpec> resolved =
      spec ? validateSpec(*spec) : llvm::Expected<KernelSpec>(spec.takeError());
  if (!resolved) {
    for (const std::string &m : takeProblems(resolved.takeError()).messages)
      os << "  error:   " << m << "\n";
    os << "\n";
    return;
  }
  std::string name = encodeName(*resolved);
  llvm::Expected<KernelSpec> decoded = decodeName(name);
  bool roundTrips = decoded && *decoded == *resolved;
  if (!decoded)
    llvm::consumeError(decoded.takeError());
  os << "  name:    " << name << "\n"
     << "  decodes: " << (roundTrips ? "back to the same spec" : "WRONGLY")
     << "\n\n";
}

// Each kernel goes through `fmhajit run` exactly as a user would type it:
// compiled (or found in the cache), run on poisoned outputs, checked against
// the float64 reference, timed. The last one repeats the first, in the same
// process: its load line shows the in-memory cache hit.
static int runHostKernels(llvm::raw_ostream &os) {
  static const std::vector<std::vector<const char *>> kRuns = {
      {"family=fwd,dtype=fp32,d=64", "--heads", "4", "--seqlen-q", "512",
       "--check"},
      {"family=fwd,dtype=bf16,d=128,mask=causal,lse=1", "--heads", "8",
       "--heads-kv", "2", "--seqlen-q", "300", "--seqlen-k", "500", "--check"},
      {"family=fwd,dtype=fp16,d=96,mask=window,softcap=1,bias=alibi", "--heads",
       "4", "--seqlen-q", "200", "--window", "64,0", "--check"},
      {"family=fwd,dtype=bf16,d=64,varlen=1,lse=1", "--heads", "2",
       "--varlen-q", "1,37,300", "--varlen-k", "5,80,300", "--check"},
      {"family=fwd,dtype=fp32,d=64", "--heads", "4", "--seqlen-q", "512",
       "--check"},
  };
  os << "== Host kernels: JIT-compiled, run, checked against float64 ==\n";
  int worst = 0;
  for (const auto &argv : kRuns) {
    os << "\n$ fmhajit run";
    for (const char *arg : argv)
      os << " " << arg;
    os << "\n";
    os.flush();
    worst = std::max(worst, runCommand(argv));
  }
  os << "\nThe last run is the first again: its kernel came from the in-memory "
        "cache.\n"
        "A second `fmhajit demo` finds every kernel in the disk cache (see "
        "fmhajit cache stats).\n";
  return worst;
}

int fmhajit::demoCommand(llvm::ArrayRef<const char *> argv) {
  if (!argv.empty())
    return reportErrors(makeError(ErrorKind::Usage, "demo takes no arguments"));
  llvm::raw_ostream &os = llvm::outs();
  os << "== Kernel specs and their encoded names ==\n\n";
  for (llvm::StringRef text :
       {"family=fwd,dtype=fp32,d=64,target=host",
        "family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a",
        "family=fwd,dtype=fp16,d=192,dv=128,mask=window,lse=1,target=gfx942",
        "{\"family\": \"fwd_splitkv\", \"dtype\": \"bf16\", \"d\": 128, "
        "\"target\": \"sm_80\"}"})
    showSpec(text, os);
  os << "== A rejected spec: every problem is reported at once ==\n\n";
  showSpec("family=fwd,dtype=fp8_e4m3,d=72,pipeline=wgmma,target=gfx1100", os);
  return runHostKernels(os);
}
