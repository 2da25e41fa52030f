//===- VariantRegistry.cpp - The variants this process knows, by hash -----===//
#include "compiler/variants/VariantRegistry.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringMap.h"
#include <mutex>

using namespace fmhajit;
using namespace llvm;

namespace {
struct KnownVariant {
  VariantSource source;
  VariantTensorUse tensors; ///< found when the host build was checked
};
struct Registry {
  std::mutex mutex;
  StringMap<KnownVariant> byHash;
};
Registry &registry() {
  static Registry r;
  return r;
}
} // namespace

Expected<VariantHash> fmhajit::addVariant(const VariantSource &source) {
  VariantHash hash = hashVariant(source.text);
  Registry &r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.byHash.count(hash.hex))
      return hash;
  }
  LLVMContext ctx;
  Expected<CompiledVariant> host =
      compileVariant(source, variantTriple(*findArch("host")), ctx);
  if (!host)
    return host.takeError();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.byHash.try_emplace(hash.hex, KnownVariant{source, host->tensors});
  return hash;
}

static Expected<KnownVariant> findKnown(const VariantHash &hash) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.byHash.find(hash.hex);
  if (it == r.byHash.end())
    return makeError(ErrorKind::Usage,
                     "variant=" + hash.hex +
                         ": this process was not given that variant's "
                         "source; pass it (--variant FILE, or "
                         "Problem::variant)");
  return it->second;
}

Expected<VariantSource> fmhajit::findVariant(const VariantHash &hash) {
  Expected<KnownVariant> known = findKnown(hash);
  if (!known)
    return known.takeError();
  return known->source;
}

Expected<VariantTensorUse>
fmhajit::findVariantTensors(const VariantHash &hash) {
  Expected<KnownVariant> known = findKnown(hash);
  if (!known)
    return known.takeError();
  return known->tensors;
}
