//===- Registry.cpp - The candidate kernels of each target ----------------===//
#include "runtime/api/Registry.h"
#include "ir/KernelAbi.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/Profile.h"
#include "specs/Validate.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <mutex>

using namespace fmhajit;

std::string fmhajit::featureKey(const KernelSpec &s) {
  std::string key = keyOf(s.family).str() + " " + keyOf(s.dtype).str() + "->" +
                    keyOf(s.outType()).str() + " d" + std::to_string(s.d) +
                    "v" + std::to_string(s.headDimV()) + " " +
                    keyOf(s.mask).str() + " " + keyOf(s.bias).str();
  for (auto [on, word] :
       {std::pair{s.softcap, " softcap"}, std::pair{s.lse, " lse"},
        std::pair{s.dropout, " dropout"}, std::pair{s.sink, " sink"},
        std::pair{s.varlen, " varlen"}, std::pair{s.pack_gqa, " pack_gqa"}})
    if (on)
      key += word;
  if (!s.variant.empty())
    key += " variant=" + s.variant.hex;
  return key + " @" + s.target;
}

// The pipelines a profile spec stands for: every pipeline of the target's
// auto order that takes its dtype (pipeline=auto picked the first of them),
// or the one it names when that is outside the auto order.
static std::vector<Pipeline> pipelinesFor(const KernelSpec &spec,
                                          const ArchInfo &arch) {
  if (spec.pipeline != Pipeline::Auto &&
      !llvm::is_contained(arch.autoOrder, spec.pipeline))
    return {spec.pipeline};
  std::vector<Pipeline> out;
  for (Pipeline p : arch.autoOrder)
    if (llvm::is_contained(arch.pipeline(p)->dtypes, spec.dtype))
      out.push_back(p);
  return out;
}

std::vector<KernelSpec> fmhajit::candidateVariants(const KernelSpec &spec,
                                                   const ArchInfo &arch,
                                                   const DispatchTable &table) {
  if (!hasAttentionLoop(spec.family)) {
    llvm::Expected<KernelSpec> resolved = validateSpec(spec);
    if (resolved)
      return {*resolved};
    llvm::consumeError(resolved.takeError());
    return {};
  }
  std::vector<KernelSpec> out;
  unsigned d = std::max(spec.d, spec.headDimV());
  // Split-KV decodes may narrow to the table's split tiles (SplitPlanner.h).
  bool splits = hasSplitWorkItems(spec.family);
  for (Pipeline p : pipelinesFor(spec, arch))
    for (const Tile &t :
         table.tilesFor(arch, p, d, spec.dtype, spec.mask, splits)) {
      KernelSpec s = spec;
      s.pipeline = p;
      s.bm = t.bm, s.bn = t.bn, s.warps = t.warps, s.stages = t.stages;
      s.v_pretranspose = t.vPretranspose;
      llvm::Expected<KernelSpec> resolved = validateSpec(s);
      if (!resolved && s.v_pretranspose) {
        // V^T's pass is for family fwd on the TMA ring: the same tile
        // with the transposers (split-KV, for one).
        llvm::consumeError(resolved.takeError());
        s.v_pretranspose = false;
        resolved = validateSpec(s);
      }
      // fwd_paged on the ring (unpacked: packed decode keeps the tiles it
      // was timed on) serves the plan beside its fallback, which the
      // dispatcher keeps for pages the ring cannot box (readsPagesOf).
      if (resolved && loadsPagedBoxes(*resolved) && !resolved->pack_gqa &&
          !llvm::is_contained(out, *resolved))
        out.push_back(*resolved);
      if (resolved && !defaultTileServes(*resolved))
        resolved = makeError(ErrorKind::Spec, "not a default tile");
      if (!resolved) {
        // The tile's rules refuse these features (wgmma's TMA ring and
        // varlen), or the tile is not yet a default for them (the ring
        // under pack_gqa: defaultTileServes): the arch's default rows for
        // d, in order, as validation resolves them (Validate.cpp).
        llvm::consumeError(resolved.takeError());
        s.bm = s.bn = s.warps = s.stages = 0;
        resolved = validateSpec(s);
      }
      if (resolved) {
        if (!llvm::is_contained(out, *resolved))
          out.push_back(*resolved);
      } else // a tile too big for this head dim (shared memory): no candidate
        llvm::consumeError(resolved.takeError());
    }
  return out;
}

llvm::Expected<Registry> Registry::build(llvm::StringRef target,
                                         const DispatchTable &table) {
  const ArchInfo *arch = findArch(target);
  if (!arch)
    return makeError(ErrorKind::Spec, "target=" + target +
                                          ": unknown target; use one of " +
                                          allArchNames());
  Registry r;
  r.profileNames = table.profiles;
  llvm::StringSet<> seen;
  for (const std::string &profile : table.profiles) {
    auto specs = expandProfile(profile, target);
    if (!specs)
      return specs.takeError();
    for (const KernelSpec &spec : *specs)
      for (KernelSpec &s : candidateVariants(spec, *arch, table))
        if (seen.insert(encodeName(s)).second) {
          r.byFeatures[featureKey(s)].push_back(r.specs.size());
          r.specs.push_back(std::move(s));
        }
  }
  return r;
}

llvm::Expected<const Registry &> Registry::forTarget(llvm::StringRef target) {
  static std::mutex mutex;
  static llvm::StringMap<std::unique_ptr<Registry>> built;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Registry> &slot = built[target];
  if (!slot) {
    auto r = build(target, DispatchTable::forTarget(target));
    if (!r)
      return r.takeError();
    slot = std::make_unique<Registry>(std::move(*r));
  }
  return *slot;
}

std::vector<KernelSpec> Registry::matching(const std::string &key) const {
  std::vector<KernelSpec> out;
  auto it = byFeatures.find(key);
  if (it != byFeatures.end())
    for (size_t i : it->second)
      out.push_back(specs[i]);
  return out;
}
