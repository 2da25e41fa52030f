//===- VariantFlag.cpp - --variant FILE, for compile, run and plan --------===//
#include "tools/fmhajit/VariantFlag.h"
#include "compiler/variants/VariantRegistry.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace fmhajit;

void fmhajit::readVariantFlag(const Args &args, api::Problem &p,
                              ErrorList &errors) {
  std::optional<std::string> file = args.get("variant");
  if (!file)
    return;
  auto buffer = llvm::MemoryBuffer::getFile(*file, /*IsText=*/true);
  if (!buffer) {
    errors.add(ErrorKind::Io, "--variant " + *file + ": cannot read it: " +
                                  buffer.getError().message());
    return;
  }
  p.variant = (*buffer)->getBuffer().str();
  p.variantName = *file;
}

llvm::Error fmhajit::pinVariant(KernelSpec &spec, const api::Problem &p) {
  if (p.variant.empty()) {
    if (spec.variant.empty())
      return llvm::Error::success();
    return makeError(ErrorKind::Usage,
                     "variant=" + spec.variant.hex +
                         ": give the variant's source with --variant FILE");
  }
  llvm::Expected<VariantHash> hash = addVariant({p.variant, p.variantName});
  if (!hash)
    return hash.takeError();
  if (!spec.variant.empty() && spec.variant != *hash)
    return makeError(ErrorKind::Spec, "variant=" + spec.variant.hex +
                                          ": --variant " + p.variantName +
                                          " is variant " + hash->hex);
  spec.variant = *hash;
  return llvm::Error::success();
}
