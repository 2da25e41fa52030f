//===- PinnedKernel.cpp - A plan that runs the kernel its caller names ----===//
#include "runtime/api/PinnedKernel.h"
#include "runtime/api/Registry.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "specs/pipelines/WgmmaLayout.h"

using namespace fmhajit;

static llvm::Expected<KernelSpec> parsePinned(const std::string &text) {
  if (llvm::StringRef(text).starts_with("fmha_"))
    return decodeName(text);
  return parseSpec(text);
}

llvm::Expected<KernelSpec>
fmhajit::resolvePinnedKernel(const std::string &text,
                             const std::string &target) {
  auto spec = parsePinned(text);
  if (!spec)
    return spec.takeError();
  if (spec->target == "host")
    spec->target = target;
  if (spec->target != target)
    return makeError(ErrorKind::Spec,
                     "kernel " + text + " is for target " + spec->target +
                         ", but the plan's target is " + target +
                         ": name a kernel of " + target);
  return validateSpec(*spec);
}

// The family a pinned kernel answers: split-KV computes what fwd does.
static Family answeredFamily(Family family) {
  return family == Family::FwdSplitKv ? Family::Fwd : family;
}

llvm::Expected<Dispatch> fmhajit::dispatchPinned(const KernelSpec &given,
                                                 const DispatchQuery &query) {
  // The problem brings the variant's source, so a pinned spec without a
  // variant takes the problem's: its hash is not something to write by hand.
  KernelSpec pinned = given;
  if (pinned.variant.empty())
    pinned.variant = query.features.variant;
  KernelSpec answers = pinned;
  answers.family = answeredFamily(pinned.family);
  // Packing GQA heads moves rows between tiles; it computes the same.
  answers.pack_gqa = query.features.pack_gqa;
  std::string has = featureKey(answers), needs = featureKey(query.features);
  std::string name = encodeName(pinned);
  if (has != needs)
    return makeError(ErrorKind::Spec, "kernel " + name + " computes " + has +
                                          ", but the problem needs " + needs);
  if (kvRowAlignmentNeeded(pinned) > query.kvRowAlignment)
    return makeError(
        ErrorKind::Spec,
        "kernel " + name + " reads K/V rows " +
            std::to_string(kvRowAlignmentNeeded(pinned)) +
            " bytes at a time, but the problem's rows start only " +
            std::to_string(query.kvRowAlignment) + "-byte aligned");
  if (query.log2PageSize >= 0 &&
      !readsPagesOf(pinned, unsigned(query.log2PageSize)))
    return makeError(ErrorKind::Spec,
                     "kernel " + name + " " +
                         pagesTooSmall(pinned, unsigned(query.log2PageSize)));
  Dispatch d;
  d.chosen = pinned;
  d.featureMatches = {pinned};
  d.fromRegistry = false;
  d.pinned = true;
  d.rules.push_back({"pinned", "Options::kernel names " + name});
  return d;
}
