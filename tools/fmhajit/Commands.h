//===- Commands.h - The fmhajit subcommands -------------------------------===//
#pragma once

#include "tools/fmhajit/Args.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

/// A subcommand: takes the words after its name, returns the exit code.
using CommandFn = int (*)(llvm::ArrayRef<const char *> argv);

int nameCommand(llvm::ArrayRef<const char *> argv);
int decodeCommand(llvm::ArrayRef<const char *> argv);
int validateCommand(llvm::ArrayRef<const char *> argv);
int listCommand(llvm::ArrayRef<const char *> argv);
int demoCommand(llvm::ArrayRef<const char *> argv);
int runCommand(llvm::ArrayRef<const char *> argv);
int compileCommand(llvm::ArrayRef<const char *> argv);
int cacheCommand(llvm::ArrayRef<const char *> argv);
int planCommand(llvm::ArrayRef<const char *> argv);

/// The flags of the commands that take any (`fmhajit help COMMAND`);
/// run's and plan's are in RunOptions.h and PlanOptions.h.
llvm::ArrayRef<OptionSpec> compileFlags();
llvm::ArrayRef<OptionSpec> listFlags();
llvm::ArrayRef<OptionSpec> cacheFlags();

/// Prints each problem in \p err as one `error:` line on stderr and returns
/// the exit code: 2 for usage errors, 1 for everything else.
int reportErrors(llvm::Error err);

} // namespace fmhajit
