//===- main.cpp - The fmhajit command line --------------------------------===//
//
// Exit codes: 0 success; 1 an invalid spec or name, or a failed run or check;
// 2 a usage error. Every problem is one `error:` line on stderr.
// `fmhajit help COMMAND` and `fmhajit COMMAND --help` list a command's flags.
//
//===----------------------------------------------------------------------===//
#include "specs/Errors.h"
#include "specs/Version.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/PlanOptions.h"
#include "tools/fmhajit/RunOptions.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

namespace {
using FlagsFn = llvm::ArrayRef<OptionSpec> (*)();

struct Command {
  llvm::StringRef name;
  CommandFn run;
  llvm::StringRef usage;
  FlagsFn flags;             ///< null: the command takes no flags
  llvm::StringRef more = ""; ///< where to read on
};

const Command kCommands[] = {
    {"demo", demoCommand, "demo                      show what fmhajit does",
     nullptr},
    {"name", nameCommand,
     "name SPEC                 print the encoded name of SPEC", nullptr,
     "docs/names.md"},
    {"decode", decodeCommand,
     "decode NAME               print the spec NAME stands for, as JSON",
     nullptr, "docs/names.md"},
    {"validate", validateCommand,
     "validate SPEC             check SPEC, print its resolved form", nullptr,
     "docs/specs.md"},
    {"compile", compileCommand,
     "compile SPEC --emit llvm|opt|asm|obj [-o FILE]   dump a pipeline stage",
     compileFlags},
    {"run", runCommand,
     "run SPEC [--batch B --heads H --seqlen-q SQ ... --check --save DIR]   "
     "run a kernel (see docs/run.md)",
     runFlags, "docs/run.md, docs/families.md"},
    {"plan", planCommand,
     "plan [--batch B --heads H --seqlen-q SQ --d D --mask M ... --autotune]   "
     "show the kernels fmhajit picks (see docs/api.md)",
     planFlags, "docs/api.md"},
    {"list", listCommand,
     "list [--profile P] [--target T]   list profiles, or a profile's kernels",
     listFlags},
    {"cache", cacheCommand,
     "cache path|stats|clear|warm   show, empty or fill the on-disk kernel "
     "cache",
     cacheFlags, "docs/cache.md"},
};

void printHelp(llvm::raw_ostream &os) {
  os << "fmhajit " FMHAJIT_VERSION
        " - a JIT compiler for fused multi-head attention\n\n"
     << "usage: fmhajit COMMAND [ARGS]\n\ncommands:\n";
  for (const Command &c : kCommands)
    os << "  " << c.usage << "\n";
  os << "\nA SPEC is key=value pairs (family=fwd,dtype=bf16,d=128,mask=causal,"
        "target=host)\nor a JSON object with the same keys; see "
        "docs/specs.md.\n"
     << "fmhajit help COMMAND (or fmhajit COMMAND --help) lists its flags.\n"
     << "Exit codes: 0 success, 1 invalid spec/name or failed run, 2 usage "
        "error.\n";
}

void printCommandHelp(const Command &c, llvm::raw_ostream &os) {
  os << "usage: fmhajit " << c.usage << "\n";
  if (c.flags) {
    os << "\nflags (--name value or --name=value):\n";
    for (const OptionSpec &f : c.flags()) {
      std::string name = ("--" + f.name + (f.takesValue ? " X" : "")).str();
      os << "  " << llvm::left_justify(name, 16) << " " << f.help << "\n";
    }
  }
  if (!c.more.empty())
    os << "\nsee " << c.more << "\n";
}

const Command *findCommand(llvm::StringRef name) {
  const Command *c = llvm::find_if(
      kCommands, [&](const Command &c) { return c.name == name; });
  return c == std::end(kCommands) ? nullptr : c;
}

bool asksForHelp(llvm::ArrayRef<const char *> argv) {
  return llvm::any_of(
      argv, [](llvm::StringRef a) { return a == "--help" || a == "-h"; });
}

int unknownCommand(llvm::StringRef name) {
  return reportErrors(makeError(
      ErrorKind::Usage,
      (name.empty() ? "no command given" : "unknown command '" + name + "'") +
          "; run fmhajit --help"));
}

// `help` alone prints the overview, `help COMMAND` that command's flags.
int helpCommand(llvm::ArrayRef<const char *> argv) {
  if (argv.empty()) {
    printHelp(llvm::outs());
    return 0;
  }
  const Command *c = findCommand(argv.front());
  if (!c)
    return unknownCommand(argv.front());
  printCommandHelp(*c, llvm::outs());
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::StringRef first = argc > 1 ? argv[1] : "";
  llvm::ArrayRef<const char *> rest(argv + std::min(argc, 2), argv + argc);
  if (first == "--help" || first == "-h" || first == "help")
    return helpCommand(rest);
  if (first == "--version") {
    llvm::outs() << "fmhajit " FMHAJIT_VERSION "\n";
    return 0;
  }
  const Command *c = findCommand(first);
  if (!c)
    return unknownCommand(first);
  if (asksForHelp(rest)) {
    printCommandHelp(*c, llvm::outs());
    return 0;
  }
  return c->run(rest);
}
