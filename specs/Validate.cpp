//===- Validate.cpp - Spec rules and default resolution -------------------===//
#include "specs/Validate.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/pipelines/AmdgpuBackwardLayout.h"
#include "specs/pipelines/BackwardMmaLayout.h"
#include "specs/pipelines/VectorLayout.h"
#include "specs/pipelines/WgmmaBackwardLayout.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include <iterator>

#include <optional>

using namespace fmhajit;
using llvm::Twine;

namespace {
/// The optional features a family may use; the rest must stay off.
enum Feature : unsigned {
  kMask = 1,
  kBias = 2,
  kSoftcap = 4,
  kLse = 8,
  kDropout = 16,
  kSink = 32,
  kVarlen = 64,
  kFp8 = 128,
  kPackGqa = 256,
  kDeterministic = 512,
  kVariant = 1024,
  kHeadItems = 2048,
  kVPretranspose = 4096,
};
struct FamilyRule {
  Family family;
  unsigned features;
  const char *why; ///< why the others are off, for messages
};
// Inference kernels take no dropout; backward kernels read the forward LSE
// rather than writing one; helpers that run no attention loop take no score
// modifiers; paged and combine kernels get their lengths another way.
const FamilyRule kFamilyRules[] = {
    {Family::Fwd,
     kMask | kBias | kSoftcap | kLse | kDropout | kSink | kVarlen | kFp8 |
         kPackGqa | kVariant | kVPretranspose,
     ""},
    {Family::FwdSplitKv,
     kMask | kBias | kSoftcap | kLse | kSink | kVarlen | kFp8 | kPackGqa |
         kVariant,
     "split-KV is an inference kernel"},
    {Family::SplitKvCombine, kLse | kVarlen,
     "the combine step runs no attention loop"},
    {Family::FwdPaged,
     kMask | kBias | kSoftcap | kLse | kSink | kFp8 | kPackGqa | kVariant,
     "paged kernels are inference kernels with per-sequence cache lengths"},
    {Family::AppendKv, kFp8, "append_kv only writes K/V rows"},
    {Family::BwdDotDoO, kVarlen, "bwd_dot_do_o runs no attention loop"},
    {Family::BwdDqDkDv,
     kMask | kBias | kSoftcap | kDropout | kSink | kVarlen | kDeterministic |
         kHeadItems,
     "the backward pass reads the forward LSE, has no fp8 form and keeps "
     "one query head per tile"},
    {Family::BwdConvertDq, kVarlen, "bwd_convert_dq runs no attention loop"},
};

/// Which feature bit each 0/1 flag needs, in SpecKeys.def's order.
struct FlagFeature {
  bool KernelSpec::*field;
  Feature feature;
  const char *key;
};
constexpr FlagFeature kFlagFeatures[] = {
    {&KernelSpec::softcap, kSoftcap, "softcap"},
    {&KernelSpec::lse, kLse, "lse"},
    {&KernelSpec::dropout, kDropout, "dropout"},
    {&KernelSpec::sink, kSink, "sink"},
    {&KernelSpec::varlen, kVarlen, "varlen"},
    {&KernelSpec::pack_gqa, kPackGqa, "pack_gqa"},
    {&KernelSpec::v_pretranspose, kVPretranspose, "v_pretranspose"},
    {&KernelSpec::deterministic, kDeterministic, "deterministic"},
    {&KernelSpec::head_items, kHeadItems, "head_items"}};

// A flag added to SpecKeys.def must say here which families take it, or the
// build stops: an unchecked flag would be accepted by every family.
constexpr const char *kSpecFlags[] = {
#define SPEC_FLAG(Name, Token, Help) #Name,
#include "specs/SpecKeys.def"
};
constexpr bool sameText(const char *a, const char *b) {
  for (; *a && *a == *b; ++a, ++b)
    ;
  return *a == *b;
}
constexpr bool flagFeaturesMatchSpecKeys() {
  if (std::size(kFlagFeatures) != std::size(kSpecFlags))
    return false;
  for (size_t i = 0; i < std::size(kSpecFlags); ++i)
    if (!sameText(kFlagFeatures[i].key, kSpecFlags[i]))
      return false;
  return true;
}
static_assert(
    flagFeaturesMatchSpecKeys(),
    "kFlagFeatures must list the flags of SpecKeys.def, in its order");

const FamilyRule &ruleFor(Family f) {
  for (const FamilyRule &r : kFamilyRules)
    if (r.family == f)
      return r;
  llvm_unreachable("family without a rule");
}

template <typename T> std::string joinValues(const std::vector<T> &values) {
  std::vector<std::string> parts;
  for (const T &v : values) {
    if constexpr (std::is_same_v<T, DType>)
      parts.push_back(keyOf(v).str());
    else if constexpr (std::is_same_v<T, Pipeline>)
      parts.push_back(keyOf(v).str());
    else
      parts.push_back(std::to_string(v));
  }
  return llvm::join(parts, ", ");
}

/// Validation state: the spec being resolved, its arch, the problems found.
class Validator {
public:
  Validator(KernelSpec spec, const ArchInfo &arch)
      : s(std::move(spec)), arch(arch) {}
  llvm::Expected<KernelSpec> run();

private:
  void fail(const Twine &key, const Twine &value, const Twine &why) {
    errors.add(ErrorKind::Spec, key + "=" + value + ": " + why);
  }
  void checkFamilyFeatures();
  void checkDTypes();
  void checkHeadDims();
  bool resolvePipeline();
  void resolveTile();
  void checkTile(const PipelineInfo &info);

  KernelSpec s;
  const ArchInfo &arch;
  ErrorList errors;
};
} // namespace

bool fmhajit::hasAttentionLoop(Family f) {
  return f == Family::Fwd || f == Family::FwdSplitKv || f == Family::FwdPaged ||
         f == Family::BwdDqDkDv;
}

void Validator::checkFamilyFeatures() {
  const FamilyRule &rule = ruleFor(s.family);
  std::string family = ("family " + keyOf(s.family)).str();
  auto check = [&](bool on, Feature f, const char *key, llvm::StringRef value) {
    if (on && !(rule.features & f))
      fail(key, value,
           f == kVPretranspose
               ? "only family fwd takes it: its pass writes V^T for the "
                 "forward kernel's TMA loads"
               : family + " does not take it (" + rule.why + ")");
  };
  check(s.mask != Mask::None, kMask, "mask", keyOf(s.mask));
  check(s.bias != Bias::None, kBias, "bias", keyOf(s.bias));
  for (const FlagFeature &f : kFlagFeatures)
    check(s.*f.field, f.feature, f.key, "1");
  check(isFp8(s.dtype), kFp8, "dtype", keyOf(s.dtype));
  check(!s.variant.empty(), kVariant, "variant", s.variant.hex);
  // One GPU block per head would leave most of the GPU idle: there key
  // items add dQ atomically, or query items own it (deterministic=1).
  if (s.head_items && arch.backend != Backend::Host)
    fail("head_items", "1",
         "a schedule of the host's backward; on " + arch.name +
             " leave it out (key items add dQ atomically, or with "
             "deterministic=1 query items own it)");
}

void Validator::checkDTypes() {
  if (!arch.hasDType(s.dtype))
    fail("dtype", keyOf(s.dtype),
         "not supported on " + arch.name + "; use " + joinValues(arch.dtypes));
  DType out = s.outType();
  if (isFp8(out))
    fail("out", keyOf(out),
         "fp8 outputs are not supported; use fp32, fp16 or bf16");
  else if (!isFp8(s.dtype) && out != s.dtype && out != DType::F32)
    fail("out", keyOf(out),
         "the output of a " + keyOf(s.dtype) + " kernel is " + keyOf(s.dtype) +
             " or fp32");
  s.out = out;
}

void Validator::checkHeadDims() {
  if (!arch.hasHeadDim(s.d))
    fail("d", Twine(s.d),
         "head dim " + Twine(s.d) + " is not supported on " + arch.name +
             "; use " + joinValues(arch.headDims));
  bool dvGiven = s.dv != 0 && s.dv != s.d; // else it follows d, checked above
  s.dv = s.headDimV();
  if (dvGiven && !arch.hasHeadDim(s.dv))
    fail("dv", Twine(s.dv),
         "head dim " + Twine(s.dv) + " is not supported on " + arch.name +
             "; use " + joinValues(arch.headDims));
}

// Auto takes the first pipeline of the target's preference list that handles
// the dtype and whose tile rules take the spec (wgmma, first on sm_90a, needs
// head dims in 64-column slabs; d=96 goes on to mma); if none takes it, the
// first that handles the dtype, whose errors then say why. Returns false
// when no pipeline handles the dtype (an error is recorded).
bool Validator::resolvePipeline() {
  // The GPU backward runs on mma (BackwardMmaLayout.h), and bwd_dq_dk_dv
  // on wgmma where the target has it and its rules take the spec
  // (WgmmaBackwardLayout.h); otherwise its tile errors are mma's.
  if (s.pipeline == Pipeline::Auto && isBackwardFamily(s.family) &&
      arch.backend == Backend::Nvptx && arch.pipeline(Pipeline::Mma)) {
    KernelSpec trial = s;
    trial.pipeline = Pipeline::Wgmma;
    Validator v(trial, arch);
    bool wgmma =
        s.family == Family::BwdDqDkDv && arch.pipeline(Pipeline::Wgmma) &&
        !WgmmaBackwardLayout::defaultTiles(std::max(s.d, s.dv)).empty();
    if (wgmma)
      v.resolveTile();
    s.pipeline = wgmma && v.errors.empty() ? Pipeline::Wgmma : Pipeline::Mma;
  }
  // On AMDGPU, for mfma or wmma (AmdgpuBackwardLayout.h), whichever the
  // target has.
  if (s.pipeline == Pipeline::Auto && isBackwardFamily(s.family) &&
      arch.backend == Backend::Amdgpu)
    for (Pipeline p : {Pipeline::Mfma, Pipeline::Wmma})
      if (arch.pipeline(p))
        s.pipeline = p;
  if (s.pipeline == Pipeline::Auto) {
    std::optional<Pipeline> first;
    for (Pipeline p : arch.autoOrder) {
      if (!llvm::is_contained(arch.pipeline(p)->dtypes, s.dtype))
        continue;
      if (!first)
        first = p;
      KernelSpec trial = s;
      trial.pipeline = p;
      Validator v(trial, arch);
      v.resolveTile();
      if (v.errors.empty()) {
        s.pipeline = p;
        return true;
      }
    }
    if (first) {
      s.pipeline = *first;
      return true;
    }
    fail("pipeline", "auto",
         "no pipeline of " + arch.name + " handles dtype " + keyOf(s.dtype));
    return false;
  }
  const PipelineInfo *info = arch.pipeline(s.pipeline);
  std::vector<Pipeline> offered;
  for (const auto &entry : arch.pipelines)
    offered.push_back(entry.first);
  if (!info) {
    fail("pipeline", keyOf(s.pipeline),
         "not available on " + arch.name + "; use auto, " +
             joinValues(offered));
    return false;
  }
  if (!llvm::is_contained(info->dtypes, s.dtype)) {
    fail("pipeline", keyOf(s.pipeline),
         "does not handle dtype " + keyOf(s.dtype) + " on " + arch.name +
             "; it takes " + joinValues(info->dtypes));
    return false;
  }
  return true;
}

// Tile keys left unset come from the first default row for the head dim
// whose tile rules take the spec (wgmma's TMA ring reads no varlen or paged
// rows: the next row serves them), else from the first row. A row serves
// only where defaultTileServes: pack_gqa reaches the ring only by naming
// stages itself.
void Validator::resolveTile() {
  const PipelineInfo &info = *arch.pipeline(s.pipeline);
  KernelSpec given = s;
  auto fill = [&](const TileConfig *t) {
    s = given;
#define SPEC_TILE(Name, Letter, Help) s.Name = s.Name ? s.Name : t->Name;
#include "specs/SpecKeys.def"
  };
  std::vector<const TileConfig *> rows =
      arch.defaultTiles(s.pipeline, std::max(s.d, s.dv), s.dtype);
  // The backward has its own tiles (specs/pipelines/BackwardMmaLayout.h,
  // WgmmaBackwardLayout.h, AmdgpuBackwardLayout.h, VectorLayout.h).
  if (isBackwardFamily(s.family) && arch.backend == Backend::Nvptx &&
      s.pipeline == Pipeline::Mma)
    rows = {&BackwardMmaLayout::defaultTile(s)};
  if (isBackwardFamily(s.family) && arch.backend == Backend::Nvptx &&
      s.pipeline == Pipeline::Wgmma)
    rows = WgmmaBackwardLayout::defaultTiles(std::max(s.d, s.dv));
  if (isBackwardFamily(s.family) && arch.backend == Backend::Amdgpu &&
      (s.pipeline == Pipeline::Mfma || s.pipeline == Pipeline::Wmma))
    rows = AmdgpuBackwardLayout::defaultTiles(s.pipeline);
  if (isBackwardFamily(s.family) && arch.backend == Backend::Host)
    rows = {&VectorLayout::backwardTile()};
  auto taken = [&](const TileConfig *t) {
    fill(t);
    KernelSpec trial = s;
    Validator v(trial, arch);
    v.checkTile(info);
    return v.errors.empty() && (given.stages || defaultTileServes(trial));
  };
  if (!rows.empty() && llvm::none_of(rows, taken))
    fill(rows.front()); // none takes it: the first row's errors say why
  checkTile(info);
  if (errors.empty() && !given.stages && !defaultTileServes(s))
    fail("stages", Twine(s.stages),
         "pack_gqa takes pipeline wgmma's TMA ring only where the spec names "
         "stages (its tiles are not yet timed against stages=1's): name "
         "stages=" +
             Twine(s.stages) + " to use it");
}

// The table's rules here; the pipeline's own (stages, how warps divide the
// tile, register arrays, footprint) once these hold, as they presuppose them.
void Validator::checkTile(const PipelineInfo &info) {
  auto checkEdge = [&](const char *key, unsigned v, unsigned multiple) {
    if (v < 16 || v > 256 || v % multiple)
      fail(key, Twine(v),
           "tile edges run from 16 to 256 in multiples of " + Twine(multiple) +
               " for pipeline " + keyOf(s.pipeline) + " on " + arch.name);
  };
  // Keys as rows take bm under 64 (WgmmaLayout::checkKeysAsRows).
  if (!keysAsRows(s))
    checkEdge("bm", s.bm, info.bmMultiple);
  checkEdge("bn", s.bn, info.bnMultiple);
  // wgmma runs whole warpgroups, any number of them (WgmmaLayout checks
  // the multiple of 4); the other pipelines divide tiles by powers of two.
  bool warpgroups = s.pipeline == Pipeline::Wgmma;
  if (s.warps < 1 || s.warps > arch.maxWarps ||
      (!warpgroups && !llvm::isPowerOf2_32(s.warps)))
    fail("warps", Twine(s.warps),
         (warpgroups ? "use a multiple of 4 up to "
                     : "use a power of two up to ") +
             Twine(arch.maxWarps) + " on " + arch.name);
  if (s.v_pretranspose && s.pipeline != Pipeline::Wgmma)
    fail("v_pretranspose", "1",
         "only pipeline wgmma reads V^T by TMA; pipeline " + keyOf(s.pipeline) +
             " reads V as it is");
  if (errors.empty())
    checkTileRules(s, arch, errors);
}

llvm::Expected<KernelSpec> Validator::run() {
  checkFamilyFeatures();
  checkDTypes();
  checkHeadDims();
  if (resolvePipeline() && errors.empty())
    resolveTile();
  if (!errors.empty())
    return errors.take();
  return s;
}

llvm::Expected<KernelSpec> fmhajit::validateSpec(const KernelSpec &spec) {
  const ArchInfo *arch = findArch(spec.target);
  if (!arch)
    return makeError(ErrorKind::Spec, "target=" + spec.target +
                                          ": unknown target; use one of " +
                                          allArchNames());
  return Validator(spec, *arch).run();
}
