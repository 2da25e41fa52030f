//===- Args.cpp - Command-line arguments of one subcommand ----------------===//
#include "tools/fmhajit/Args.h"
#include "specs/Errors.h"
#include "llvm/ADT/STLExtras.h"

using namespace fmhajit;
using llvm::StringRef;

llvm::Expected<Args> Args::parse(llvm::ArrayRef<const char *> argv,
                                 llvm::ArrayRef<OptionSpec> options) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    StringRef word = argv[i];
    // "-o" is the one short option: the output file, as compilers spell it.
    bool shortOutput = word == "-o";
    if (!shortOutput && (!word.starts_with("--") || word == "--")) {
      args.positionals.push_back(word.str());
      continue;
    }
    auto [nameRef, inlineValue] =
        word.drop_front(shortOutput ? 1 : 2).split('=');
    StringRef name = nameRef;
    const OptionSpec *opt = llvm::find_if(
        options, [&](const OptionSpec &o) { return o.name == name; });
    if (opt == options.end())
      return makeError(ErrorKind::Usage, "unknown option --" + name);
    if (args.values.count(name) && !opt->repeatable)
      return makeError(ErrorKind::Usage,
                       "option --" + name + " is given twice");
    std::vector<std::string> &values = args.values[name];
    if (!opt->takesValue) {
      if (word.contains('='))
        return makeError(ErrorKind::Usage,
                         "option --" + name + " takes no value");
      values.push_back("");
    } else if (word.contains('=')) {
      values.push_back(inlineValue.str());
    } else if (i + 1 < argv.size()) {
      values.push_back(argv[++i]);
    } else {
      return makeError(ErrorKind::Usage, "option --" + name + " needs a value");
    }
  }
  return args;
}

std::optional<std::string> Args::get(StringRef name) const {
  auto it = values.find(name);
  if (it == values.end())
    return std::nullopt;
  return it->second.front();
}

std::vector<std::string> Args::getAll(StringRef name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>() : it->second;
}

llvm::Expected<std::optional<int64_t>> Args::getInt(StringRef name, int64_t min,
                                                    int64_t max) const {
  std::optional<std::string> text = get(name);
  if (!text)
    return std::optional<int64_t>();
  int64_t v = 0;
  if (StringRef(*text).getAsInteger(10, v) || v < min || v > max)
    return makeError(ErrorKind::Usage, "--" + name + " " + *text +
                                           ": expected a whole number from " +
                                           llvm::Twine(min) + " to " +
                                           llvm::Twine(max));
  return std::optional<int64_t>(v);
}
