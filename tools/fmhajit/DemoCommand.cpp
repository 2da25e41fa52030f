//===- DemoCommand.cpp - fmhajit demo: a tour of what fmhajit does --------===//
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tools/fmhajit/Commands.h"
#include "llvm/Support/raw_ostream.h"

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
     << "  decodes: " << (roundTrips ? "back to the same spec" : "WRONGLY") << "\n\n";
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
  return 0;
}
