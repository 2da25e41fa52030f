//===- ApiSpecs.cpp - validateSpec, decodeName, compileSpec, accuracyFor --===//
//
// The CLI's name/decode/validate/compile as public calls: the same parser,
// validator and pipeline, their errors through toStatus().
//
//===----------------------------------------------------------------------===//
#include "compiler/KernelCompiler.h"
#include "fmhajit/Specs.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/numerics/Tolerance.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"

using namespace fmhajit;
using namespace fmhajit::api;

static SpecInfo infoFor(const KernelSpec &spec) {
  return {encodeName(spec), printSpec(spec), printSpecJson(spec)};
}

// Parsed, with \p target (when given) in place of the spec's, then
// validated: the order `fmhajit compile --target` uses.
static llvm::Expected<KernelSpec> parseAndValidate(const std::string &text,
                                                   const std::string &target) {
  llvm::Expected<KernelSpec> spec = parseSpec(text);
  if (!spec)
    return spec.takeError();
  if (!target.empty())
    spec->target = target;
  return validateSpec(*spec);
}

Result<SpecInfo> api::validateSpec(const std::string &spec) {
  llvm::Expected<KernelSpec> valid = parseAndValidate(spec, "");
  if (!valid)
    return toStatus(valid.takeError());
  return infoFor(*valid);
}

Result<SpecInfo> api::decodeName(const std::string &name) {
  llvm::Expected<KernelSpec> spec = fmhajit::decodeName(name);
  if (!spec)
    return toStatus(spec.takeError());
  return infoFor(*spec);
}

Result<std::string> api::compileSpec(const std::string &spec,
                                     const std::string &emit,
                                     const std::string &target) {
  std::optional<Stage> stage = parseStage(emit);
  if (!stage)
    return Status(StatusCode::InvalidArgument,
                  "emit " + emit + ": use llvm, opt, asm or obj");
  llvm::Expected<KernelSpec> valid = parseAndValidate(spec, target);
  if (!valid)
    return toStatus(valid.takeError());
  return toResult(
      compileToStage(*valid, *stage, compileOptionsFromEnvironment()));
}

Result<Accuracy> api::accuracyFor(DType input, DType output, bool gradients) {
  if (output == DType::F8E4M3 || output == DType::F8E5M2)
    return Status(StatusCode::InvalidArgument,
                  "outputs are fp32, fp16 or bf16, never fp8");
  Tolerance t = gradients
                    ? backwardToleranceFor(toDType(input), toDType(output))
                    : toleranceFor(toDType(input), toDType(output));
  return Accuracy{t.relL2, t.maxAbs, t.lseRel};
}
