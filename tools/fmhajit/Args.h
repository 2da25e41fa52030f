//===- Args.h - Command-line arguments of one fmhajit subcommand ----------===//
//
// Each subcommand declares its options; anything else is a usage error.
// Options are `--name value`, `--name=value` or bare `--flag`; only an
// option declared repeatable may be given more than once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct OptionSpec {
  llvm::StringRef name; ///< without the leading "--"
  bool takesValue;
  llvm::StringRef help = ""; ///< one line for `fmhajit help COMMAND`
  bool repeatable = false;   ///< may be given more than once, in order
};

class Args {
public:
  /// Parses \p argv (the words after the subcommand).
  static llvm::Expected<Args> parse(llvm::ArrayRef<const char *> argv,
                                    llvm::ArrayRef<OptionSpec> options);

  const std::vector<std::string> &positional() const { return positionals; }
  bool has(llvm::StringRef name) const { return values.count(name); }
  /// The option's value (a repeatable option's first).
  std::optional<std::string> get(llvm::StringRef name) const;
  /// Every value of a repeatable option, in the order given.
  std::vector<std::string> getAll(llvm::StringRef name) const;

  /// The option as a number; a usage error names the option when it is not.
  llvm::Expected<std::optional<int64_t>> getInt(llvm::StringRef name,
                                                int64_t min, int64_t max) const;

private:
  std::vector<std::string> positionals;
  llvm::StringMap<std::vector<std::string>> values;
};

} // namespace fmhajit
