//===- CompileCommand.cpp - fmhajit compile: dump a pipeline stage --------===//
#include "compiler/KernelCompiler.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/VariantFlag.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

// The spec's target, or --target's (which overrides it).
static llvm::Expected<KernelSpec> specFor(const Args &args) {
  if (args.positional().size() != 1)
    return makeError(ErrorKind::Usage, "compile takes one SPEC");
  auto spec = parseSpec(args.positional()[0]);
  if (!spec)
    return spec.takeError();
  if (auto target = args.get("target"))
    spec->target = *target;
  api::Problem variant; // only its variant fields
  ErrorList errors;
  readVariantFlag(args, variant, errors);
  if (!errors.empty())
    return errors.take();
  if (llvm::Error err = pinVariant(*spec, variant))
    return std::move(err);
  return validateSpec(*spec);
}

static llvm::Error writeOutput(llvm::StringRef path, llvm::StringRef bytes) {
  if (path.empty() || path == "-") {
    llvm::outs() << bytes;
    return llvm::Error::success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (!ec) {
    os << bytes;
    os.close();
    ec = os.error();
  }
  if (ec)
    return makeError(ErrorKind::Io,
                     "cannot write " + path + ": " + ec.message());
  return llvm::Error::success();
}

static const OptionSpec kCompileFlags[] = {
    {"emit", true, "the stage to dump: llvm|opt|asm|obj"},
    {"o", true, "write to FILE instead of standard output (also -o FILE)"},
    {"target", true, "compile for this target instead of the spec's"},
    {"variant", true, kVariantFlagHelp},
    {"ptx", true,
     "NVPTX: emit PTX ISA N (81 for 8.1) instead of the target's oldest, as "
     "a driver that takes it would"},
};

llvm::ArrayRef<OptionSpec> fmhajit::compileFlags() { return kCompileFlags; }

int fmhajit::compileCommand(llvm::ArrayRef<const char *> argv) {
  auto args = Args::parse(argv, compileFlags());
  if (!args)
    return reportErrors(args.takeError());
  std::string emit = args->get("emit").value_or("obj");
  std::optional<Stage> stage = parseStage(emit);
  if (!stage)
    return reportErrors(makeError(
        ErrorKind::Usage, "--emit " + emit + ": use llvm, opt, asm or obj"));
  std::string out = args->get("o").value_or("");
  if (*stage == Stage::Obj && out.empty())
    return reportErrors(makeError(ErrorKind::Usage,
                                  "--emit obj writes a binary: give -o FILE"));
  auto spec = specFor(*args);
  if (!spec)
    return reportErrors(spec.takeError());
  // On stderr: standard output is the stage's text.
  if (std::string note = variantTensorNote(*spec); !note.empty())
    llvm::errs() << "note: " << note << "\n";
  unsigned ptx = 0;
  if (std::optional<std::string> given = args->get("ptx"))
    if (llvm::StringRef(*given).getAsInteger(10, ptx) || ptx < 60)
      return reportErrors(
          makeError(ErrorKind::Usage,
                    "--ptx " + *given + ": give the ISA as 81 for 8.1"));
  auto text = compileToStage(*spec, *stage, compileOptionsFromEnvironment(ptx));
  if (!text)
    return reportErrors(text.takeError());
  if (llvm::Error err = writeOutput(out, *text))
    return reportErrors(std::move(err));
  return 0;
}
