//===- KernelCompiler.cpp - Resolved spec to artifact ---------------------===//
#include "compiler/KernelCompiler.h"
#include "compiler/AmdgpuLinker.h"
#include "compiler/Optimizer.h"
#include "compiler/SourceHash.h"
#include "compiler/TargetMachines.h"
#include "compiler/variants/VariantFrontend.h"
#include "compiler/variants/VariantRegistry.h"
#include "ir/KernelEmitter.h"
#include "specs/EmbeddedData.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Version.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include <cstdlib>
#include <map>
#include <mutex>

using namespace fmhajit;
using namespace llvm;

std::optional<Stage> fmhajit::parseStage(StringRef text) {
  if (text == "llvm")
    return Stage::Llvm;
  if (text == "opt")
    return Stage::Opt;
  if (text == "asm")
    return Stage::Asm;
  if (text == "obj")
    return Stage::Obj;
  return std::nullopt;
}

static std::string printModule(const Module &m) {
  std::string text;
  raw_string_ostream os(text);
  m.print(os, nullptr);
  return text;
}

static Expected<std::string> emitCode(Module &m, TargetMachine &tm,
                                      CodeGenFileType type) {
  SmallVector<char, 0> buffer;
  raw_svector_ostream os(buffer);
  legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    return makeError(ErrorKind::Jit, "LLVM cannot emit this file type for " +
                                         tm.getTargetTriple().str());
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

// NVPTX's loadable artifact is its assembly (PTX), which the driver JITs.
static CodeGenFileType artifactFileType(const ArchInfo &arch, Stage stage) {
  if (stage == Stage::Asm || arch.backend == Backend::Nvptx)
    return CodeGenFileType::AssemblyFile;
  return CodeGenFileType::ObjectFile;
}

// The module of the spec's variant for its target (null: none), from the
// source this process was given under the spec's hash.
static Expected<std::unique_ptr<Module>>
compileSpecVariant(const KernelSpec &spec, LLVMContext &ctx) {
  if (spec.variant.empty())
    return nullptr;
  Expected<VariantSource> source = findVariant(spec.variant);
  if (!source)
    return source.takeError();
  Expected<CompiledVariant> variant =
      compileVariant(*source, variantTriple(*findArch(spec.target)), ctx);
  if (!variant)
    return variant.takeError();
  return std::move(variant->module);
}

Expected<std::string> fmhajit::compileToStage(const KernelSpec &spec,
                                              Stage stage,
                                              const CompileOptions &options) {
  const ArchInfo &arch = *findArch(spec.target);
  LLVMContext ctx;
  Expected<std::unique_ptr<Module>> variant = compileSpecVariant(spec, ctx);
  if (!variant)
    return variant.takeError();
  EmitOptions emit = options.emit;
  if (arch.backend == Backend::Nvptx)
    emit.ptxVersion = ptxVersionFor(arch, options.ptxVersion);
  Expected<std::unique_ptr<Module>> module =
      emitKernelModule(spec, ctx, emit, std::move(*variant));
  if (!module)
    return module.takeError();
  if (stage == Stage::Llvm)
    return printModule(**module);
  Expected<std::unique_ptr<TargetMachine>> tm =
      createTargetMachine(arch, options.ptxVersion);
  if (!tm)
    return tm.takeError();
  optimizeModule(**module, **tm);
  if (stage == Stage::Opt)
    return printModule(**module);
  Expected<std::string> code =
      emitCode(**module, **tm, artifactFileType(arch, stage));
  if (!code || stage != Stage::Obj || arch.backend != Backend::Amdgpu)
    return code;
  return linkCodeObject(*code); // AMDGPU loads shared objects (.hsaco)
}

// The per-target part is computed once: host CPU detection and hashing the
// table would otherwise dominate an in-memory cache hit.
std::string fmhajit::kernelFingerprint(const ArchInfo &arch,
                                       const CompileOptions &options) {
  static std::mutex mutex;
  static std::map<std::string, std::string> perTarget;
  std::lock_guard<std::mutex> lock(mutex);
  std::string &fp = perTarget[arch.name];
  if (fp.empty()) {
    CodegenTarget ct = codegenTarget(arch);
    uint64_t tableHash = 0;
    for (const EmbeddedFile &f : embeddedFiles("arch/" + arch.name + ".json"))
      tableHash = xxh3_64bits(f.text);
    fp = "fmhajit=" FMHAJIT_VERSION ";sources=" FMHAJIT_SOURCE_HASH
         ";llvm=" LLVM_VERSION_STRING ";clang=" +
         clangVersion() + ";triple=" + ct.triple + ";cpu=" + ct.cpu +
         ";features=" + ct.features + ";opt=O3;table=" + utohexstr(tableHash);
  }
  if (arch.backend != Backend::Nvptx)
    return fp;
  return fp +
         ";ptx=" + std::to_string(ptxVersionFor(arch, options.ptxVersion)) +
         (options.emit.boundedWaits ? ";waits=bounded" : "") +
         (options.emit.timeline ? ";timeline" : "") +
         (options.emit.skipDeadRows ? ";deadrows" : "");
}

CompileOptions fmhajit::compileOptionsFromEnvironment(unsigned ptxVersion) {
  CompileOptions options;
  options.ptxVersion = ptxVersion;
  const char *bounded = std::getenv("FMHAJIT_BOUNDED_WAITS");
  options.emit.boundedWaits = bounded && StringRef(bounded) == "1";
  const char *timeline = std::getenv("FMHAJIT_TIMELINE");
  options.emit.timeline = timeline && *timeline;
  const char *deadRows = std::getenv("FMHAJIT_DEAD_ROWS");
  options.emit.skipDeadRows = !(deadRows && StringRef(deadRows) == "0");
  return options;
}

Expected<std::shared_ptr<const Artifact>>
fmhajit::compileKernel(const KernelSpec &spec, KernelCache &cache,
                       const CompileOptions &options) {
  const ArchInfo &arch = *findArch(spec.target);
  return cache.getOrCompile(
      encodeName(spec), kernelFingerprint(arch, options),
      [&] { return compileToStage(spec, Stage::Obj, options); });
}
