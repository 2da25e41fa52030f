//===- SpecCommands.cpp - name, decode, validate, list --------------------===//
#include "runtime/api/ProfileWarmup.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Profile.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/Commands.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

// Messages quote user input; a newline or other control byte in it would
// split one problem over several lines, so those are written as \xNN.
static std::string oneLine(llvm::StringRef message) {
  std::string out;
  for (unsigned char c : message) {
    if (c < 0x20 || c == 0x7f)
      out += "\\x" + llvm::utohexstr(c, /*LowerCase=*/true, /*Width=*/2);
    else
      out += static_cast<char>(c);
  }
  return out;
}

int fmhajit::reportErrors(llvm::Error err) {
  Problems problems = takeProblems(std::move(err));
  for (const std::string &m : problems.messages)
    llvm::errs() << "error: " << oneLine(m) << "\n";
  llvm::errs().flush();
  return problems.kind == ErrorKind::Usage ? 2 : 1;
}

/// Parses a subcommand that takes exactly one positional word.
static llvm::Expected<std::string>
onePositional(llvm::ArrayRef<const char *> argv, llvm::StringRef what) {
  llvm::Expected<Args> args = Args::parse(argv, {});
  if (!args)
    return args.takeError();
  if (args->positional().size() != 1)
    return makeError(ErrorKind::Usage, "expected exactly one " + what);
  return args->positional()[0];
}

static llvm::Expected<KernelSpec> resolveSpecText(llvm::StringRef text) {
  llvm::Expected<KernelSpec> spec = parseSpec(text);
  if (!spec)
    return spec.takeError();
  return validateSpec(*spec);
}

int fmhajit::nameCommand(llvm::ArrayRef<const char *> argv) {
  llvm::Expected<std::string> text = onePositional(argv, "SPEC");
  if (!text)
    return reportErrors(text.takeError());
  llvm::Expected<KernelSpec> spec = resolveSpecText(*text);
  if (!spec)
    return reportErrors(spec.takeError());
  llvm::outs() << encodeName(*spec) << "\n";
  return 0;
}

int fmhajit::decodeCommand(llvm::ArrayRef<const char *> argv) {
  llvm::Expected<std::string> name = onePositional(argv, "NAME");
  if (!name)
    return reportErrors(name.takeError());
  llvm::Expected<KernelSpec> spec = decodeName(*name);
  if (!spec)
    return reportErrors(spec.takeError());
  llvm::outs() << printSpecJson(*spec) << "\n";
  return 0;
}

int fmhajit::validateCommand(llvm::ArrayRef<const char *> argv) {
  llvm::Expected<std::string> text = onePositional(argv, "SPEC");
  if (!text)
    return reportErrors(text.takeError());
  llvm::Expected<KernelSpec> spec = resolveSpecText(*text);
  if (!spec)
    return reportErrors(spec.takeError());
  llvm::outs() << "valid: " << encodeName(*spec) << "\n"
               << "resolved: " << printSpec(*spec) << "\n";
  return 0;
}

static const OptionSpec kListFlags[] = {
    {"profile", true,
     "list the kernels of this profile (without it: the profiles)"},
    {"target", true, "only this target's kernels (without it: every target's)"},
    {"warm", false,
     "with --target: every kernel 'fmhajit cache warm' compiles, each spec in "
     "every tile plans may pick, with the kernels plans run beside it"},
};

llvm::ArrayRef<OptionSpec> fmhajit::listFlags() { return kListFlags; }

int fmhajit::listCommand(llvm::ArrayRef<const char *> argv) {
  llvm::Expected<Args> args = Args::parse(argv, listFlags());
  if (!args)
    return reportErrors(args.takeError());
  if (!args->positional().empty())
    return reportErrors(
        makeError(ErrorKind::Usage, "list takes no positional words"));
  if (!args->has("profile")) {
    for (const ProfileInfo &p : listProfiles())
      llvm::outs() << p.name << ": " << p.description << "\n";
    return 0;
  }
  std::optional<std::string> target = args->get("target");
  if (args->has("warm") && !target)
    return reportErrors(
        makeError(ErrorKind::Usage, "list --warm needs --target T"));
  auto specs =
      args->has("warm")
          ? warmupSpecs(*args->get("profile"), *target)
          : expandProfile(*args->get("profile"),
                          target ? std::optional<llvm::StringRef>(*target)
                                 : std::nullopt);
  if (!specs)
    return reportErrors(specs.takeError());
  for (const KernelSpec &s : *specs)
    llvm::outs() << encodeName(s) << "\n";
  return 0;
}
