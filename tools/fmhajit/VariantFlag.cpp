//===- VariantFlag.cpp - --variant FILE, for compile, run and plan --------===//
#include "tools/fmhajit/VariantFlag.h"
#include "compiler/variants/VariantRegistry.h"
#include "runtime/numerics/Npy.h"
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

llvm::Expected<std::vector<VariantTensorFlag>>
fmhajit::readVariantTensorFlags(const Args &args, const api::Problem &p) {
  std::vector<std::string> files = args.getAll("variant-tensor");
  if (!files.empty() && p.variant.empty())
    return makeError(ErrorKind::Usage,
                     "--variant-tensor gives a tensor to a variant: give the "
                     "variant with --variant FILE");
  std::vector<VariantTensorFlag> out;
  for (const std::string &file : files) {
    llvm::Expected<NpyArray> array = readNpy(file);
    if (!array)
      return makeError(ErrorKind::Io, "--variant-tensor: " +
                                          llvm::toString(array.takeError()));
    if (array->data.empty())
      return makeError(ErrorKind::Usage,
                       "--variant-tensor " + file +
                           " holds no element: give at least one (an index "
                           "outside a tensor reads 0, so [0.0] stands for "
                           "none)");
    out.push_back({file, std::move(array->data)});
  }
  return out;
}

std::string fmhajit::variantTensorNote(const KernelSpec &spec) {
  if (spec.variant.empty())
    return "";
  llvm::Expected<VariantTensorUse> use = findVariantTensors(spec.variant);
  if (!use) { // pinVariant added it: not expected
    llvm::consumeError(use.takeError());
    return "";
  }
  if (!use->count())
    return "";
  return "the variant reads tensor " + use->describe() + ": a run gives " +
         std::to_string(use->count()) +
         " (fmhajit run --variant-tensor FILE.npy each, in slot order; "
         "Tensors::variantTensors)";
}
