//===- main.cpp - The fmhajit command line --------------------------------===//
//
// Exit codes: 0 success; 1 an invalid spec or name, or a failed run or check;
// 2 a usage error. Every problem is one `error:` line on stderr.
//
//===----------------------------------------------------------------------===//
#include "specs/Errors.h"
#include "specs/Version.h"
#include "tools/fmhajit/Commands.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

namespace {
struct Command {
  llvm::StringRef name;
  CommandFn run;
  llvm::StringRef usage;
};

const Command kCommands[] = {
    {"demo", demoCommand, "demo                      show what fmhajit does"},
    {"name", nameCommand, "name SPEC                 print the encoded name of SPEC"},
    {"decode", decodeCommand, "decode NAME               print the spec NAME stands for, as JSON"},
    {"validate", validateCommand, "validate SPEC             check SPEC, print its resolved form"},
    {"compile", compileCommand, "compile SPEC --emit llvm|opt|asm|obj [-o FILE]   dump a pipeline stage"},
    {"run", runCommand, "run SPEC [--batch B --heads H --seqlen-q SQ ... --check --save DIR]   run a kernel (see docs/run.md)"},
    {"plan", planCommand, "plan [--batch B --heads H --seqlen-q SQ --d D --mask M ... --autotune]   show the kernels fmhajit picks (see docs/api.md)"},
    {"list", listCommand, "list [--profile P] [--target T]   list profiles, or a profile's kernels"},
    {"cache", cacheCommand, "cache path|stats|clear    show or empty the on-disk kernel cache"},
};

void printHelp(llvm::raw_ostream &os) {
  os << "fmhajit " FMHAJIT_VERSION " - a JIT compiler for fused multi-head attention\n\n"
     << "usage: fmhajit COMMAND [ARGS]\n\ncommands:\n";
  for (const Command &c : kCommands)
    os << "  " << c.usage << "\n";
  os << "\nA SPEC is key=value pairs (family=fwd,dtype=bf16,d=128,mask=causal,"
        "target=host)\nor a JSON object with the same keys; see docs/specs.md.\n"
     << "Exit codes: 0 success, 1 invalid spec/name or failed run, 2 usage error.\n";
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::StringRef first = argc > 1 ? argv[1] : "";
  if (first == "--help" || first == "-h" || first == "help") {
    printHelp(llvm::outs());
    return 0;
  }
  if (first == "--version") {
    llvm::outs() << "fmhajit " FMHAJIT_VERSION "\n";
    return 0;
  }
  for (const Command &c : kCommands)
    if (c.name == first)
      return c.run(llvm::ArrayRef<const char *>(argv + 2, argc - 2));
  return reportErrors(makeError(
      ErrorKind::Usage, (first.empty() ? "no command given"
                                       : "unknown command '" + first + "'") +
                            "; run fmhajit --help"));
}
