//===- VariantRegistry.cpp - The variants this process knows, by hash -----===//
#include "compiler/variants/VariantRegistry.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringMap.h"
#include <mutex>

using namespace fmhajit;
using namespace llvm;

namespace {
struct Registry {
  std::mutex mutex;
  StringMap<VariantSource> byHash;
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
  Expected<std::unique_ptr<Module>> host =
      compileVariant(source, variantTriple(*findArch("host")), ctx);
  if (!host)
    return host.takeError();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.byHash.try_emplace(hash.hex, source);
  return hash;
}

Expected<VariantSource> fmhajit::findVariant(const VariantHash &hash) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.byHash.find(hash.hex);
  if (it == r.byHash.end())
    return makeError(ErrorKind::Usage,
                     "variant=" + hash.hex +
                         ": this process was not given that variant's "
                         "source; pass it (--variant FILE, or "
                         "Problem::variantSource)");
  return it->second;
}
