//===- VariantFrontend.cpp - A variant's C++ to LLVM IR, by clang ---------===//
#include "compiler/variants/VariantFrontend.h"
#include "ir/KernelAbi.h"
#include "specs/Errors.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/Basic/Version.h"
#include "clang/CodeGen/CodeGenAction.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;
using namespace llvm;

static constexpr const char *kPreludeName = "fmhajit_variant.h";
static_assert(kMaxVariantTensors == 4, "the prelude says slots 0 to 3");

// float functions clang knows as builtins, so each becomes an LLVM
// intrinsic (cc1 assumes no errno); the C++ names forward to them. Then
// the one accessor of run-time tensors (docs/variants.md#run-time-tensors):
// a C name, so its symbol is the same in C and C++; `long` is 64 bits on
// every variant triple (x86-64 Linux, nvptx64, amdgcn).
StringRef fmhajit::variantPrelude() {
  return R"(// fmhajit_variant.h: what a variant may call (docs/variants.md)
extern "C" {
float expf(float); float exp2f(float); float logf(float); float log2f(float);
float tanhf(float); float sqrtf(float); float fabsf(float); float floorf(float);
float ceilf(float); float truncf(float); float roundf(float); float rintf(float);
float fminf(float, float); float fmaxf(float, float);
float copysignf(float, float); float fmaf(float, float, float);
int abs(int);
// Element `index` of the run-time tensor in `slot` (a constant, 0 to 3),
// or 0 when index < 0 or index >= the tensor's length.
float fmhajit_tensor(int slot, long index);
}
namespace fmhajit_math {
inline float exp(float x) { return expf(x); }
inline float exp2(float x) { return exp2f(x); }
inline float log(float x) { return logf(x); }
inline float log2(float x) { return log2f(x); }
inline float tanh(float x) { return tanhf(x); }
inline float sqrt(float x) { return sqrtf(x); }
inline float fabs(float x) { return fabsf(x); }
inline float abs(float x) { return fabsf(x); }
inline float floor(float x) { return floorf(x); }
inline float ceil(float x) { return ceilf(x); }
inline float trunc(float x) { return truncf(x); }
inline float round(float x) { return roundf(x); }
inline float fmin(float x, float y) { return fminf(x, y); }
inline float fmax(float x, float y) { return fmaxf(x, y); }
inline float copysign(float x, float y) { return copysignf(x, y); }
inline float fma(float x, float y, float z) { return fmaf(x, y, z); }
inline int min(int x, int y) { return x < y ? x : y; }
inline int max(int x, int y) { return x > y ? x : y; }
inline float min(float x, float y) { return fminf(x, y); }
inline float max(float x, float y) { return fmaxf(x, y); }
}
namespace std { using namespace fmhajit_math; }
using namespace fmhajit_math;
)";
}

std::string fmhajit::clangVersion() { return CLANG_VERSION_STRING; }

static IntrusiveRefCntPtr<vfs::InMemoryFileSystem>
variantFiles(StringRef source, StringRef fileName) {
  auto files = makeIntrusiveRefCnt<vfs::InMemoryFileSystem>();
  files->setCurrentWorkingDirectory("/");
  files->addFile(kPreludeName, 0,
                 MemoryBuffer::getMemBuffer(variantPrelude(), kPreludeName));
  files->addFile(fileName, 0, MemoryBuffer::getMemBufferCopy(source, fileName));
  return files;
}

// One error per line of clang's messages (the CLI prints each as an
// `error:` line): the message, the source line, the caret.
static Error diagnosticsError(StringRef fileName, StringRef messages) {
  fmhajit::ErrorList errors;
  errors.add(ErrorKind::Spec, "variant " + fileName + " does not compile:");
  SmallVector<StringRef, 8> lines;
  messages.rtrim().split(lines, '\n');
  for (StringRef line : lines)
    if (!line.ends_with(" generated."))
      errors.add(ErrorKind::Spec, line);
  return errors.take();
}

// cc1's arguments into \p clang's invocation; they are fmhajit's own, so a
// failure is an internal error.
static Error parseArguments(clang::CompilerInstance &clang,
                            ArrayRef<const char *> args) {
  std::string messages;
  raw_string_ostream os(messages);
  clang::DiagnosticOptions options;
  clang::DiagnosticsEngine diags(clang::DiagnosticIDs::create(), options,
                                 new clang::TextDiagnosticPrinter(os, options));
  if (clang::CompilerInvocation::CreateFromArgs(clang.getInvocation(), args,
                                                diags))
    return Error::success();
  return makeError(ErrorKind::Jit,
                   "internal error: clang refused fmhajit's arguments: " +
                       messages);
}

Expected<std::unique_ptr<Module>>
fmhajit::compileVariantSource(StringRef source, StringRef fileName,
                              StringRef triple, LLVMContext &ctx) {
  std::string tripleText = triple.str(), file = fileName.str();
  const char *args[] = {
      "-triple", tripleText.c_str(), "-x", "c++", "-std=c++17", "-O2",
      // x / c multiplies by 1 / c, and a * b + c fuses,
      // as the built-in modifiers do: an fdiv costs the
      // GPU kernels 40% (soft-cap, H100)
      "-freciprocal-math", "-ffp-contract=fast", "-disable-llvm-passes",
      "-nostdsysteminc", "-nobuiltininc", "-Wall", "-Werror", "-include",
      kPreludeName, file.c_str()};
  std::string messages;
  raw_string_ostream os(messages);
  clang::CompilerInstance clang;
  if (Error err = parseArguments(clang, args))
    return std::move(err);
  clang::DiagnosticOptions &diagOptions = clang.getDiagnosticOpts();
  diagOptions.ShowColors = false;
  clang.setVirtualFileSystem(variantFiles(source, fileName));
  // -Werror and -Wall take effect only in an engine made after the
  // arguments are read.
  clang.createDiagnostics(new clang::TextDiagnosticPrinter(os, diagOptions),
                          /*ShouldOwnClient=*/true);
  // "1 error generated." goes with the messages, not to stderr.
  clang.setVerboseOutputStream(os);
  clang::EmitLLVMOnlyAction action(&ctx);
  std::unique_ptr<Module> module;
  if (clang.ExecuteAction(action))
    module = action.takeModule();
  if (!module || clang.getDiagnostics().hasErrorOccurred())
    return diagnosticsError(fileName, messages);
  return std::move(module);
}
