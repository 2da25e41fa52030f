//===- fmhajit/Specs.h - Kernel specs and names, as calls -----------------===//
//
// The spec-level commands of the CLI (name, decode, validate, compile) as
// calls of the public API, for programs and the Python module that want a
// kernel's name, its resolved spec or one stage of its compilation without
// planning a problem:
//
//   api::Result<api::SpecInfo> s = api::validateSpec("dtype=fp16,d=64");
//   s->name      // "fmha_fwd_fp16_d64_m192n64w1s1_vector_host"
//   api::compileSpec("dtype=fp16,d=64,target=sm_90a", "asm")  // PTX text
//
// A spec is key=value text or a JSON object with the same keys
// (docs/specs.md); an invalid one fails with InvalidArgument, one problem
// per line, the same lines `fmhajit validate` prints.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include "fmhajit/Status.h"
#include <string>

namespace fmhajit::api {

/// One validated spec, every default filled in.
struct SpecInfo {
  std::string name;     ///< its encoded name (docs/names.md)
  std::string resolved; ///< key=value text, every key given
  std::string json;     ///< the same as a JSON object
};

/// Parses and validates \p spec (key=value text or JSON).
Result<SpecInfo> validateSpec(const std::string &spec);

/// The spec the encoded name \p name stands for.
Result<SpecInfo> decodeName(const std::string &name);

/// One stage of \p spec's compilation: \p emit is "llvm" (the recipe's IR),
/// "opt" (after the pass pipeline), "asm" (assembly; PTX for NVIDIA) or
/// "obj" (the object file's bytes). A non-empty \p target replaces the
/// spec's. Compiles whatever the machine, GPU targets included.
Result<std::string> compileSpec(const std::string &spec,
                                const std::string &emit,
                                const std::string &target = "");

/// How close fmhajit's outputs are to a float64 reference computed on the
/// same rounded inputs: the bounds its own tests hold every kernel to.
struct Accuracy {
  double relL2;  ///< ||o - ref||_2 / ||ref||_2
  double maxAbs; ///< max |o - ref| / max |ref|
  double lseRel; ///< max |lse - ref| / max(1, |ref|)
};

/// The accuracy of kernels reading \p input and writing \p output (fp32,
/// fp16 or bf16; InvalidArgument for fp8); with \p gradients, that of the
/// backward's dQ, dK and dV (lseRel 0: it writes no LSE).
Result<Accuracy> accuracyFor(DType input, DType output, bool gradients = false);

} // namespace fmhajit::api
