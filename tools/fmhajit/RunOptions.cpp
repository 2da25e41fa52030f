//===- RunOptions.cpp - The flags of `fmhajit run` ------------------------===//
#include "tools/fmhajit/RunOptions.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/SpecParser.h"
#include "tools/fmhajit/ProblemFlags.h"
#include "tools/fmhajit/VariantFlag.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>

using namespace fmhajit;
using llvm::Twine;

namespace {
const OptionSpec kRunOnlyFlags[] = {
    {"seed", true, "seed of the inputs (q, k, v use N, N+1, N+2); default 1"},
    {"iters", true,
     "timed iterations; default: at least 3 (host) / 10 (GPU), ~0.2 s"},
    {"check", false, "compare with the float64 reference; exit 1 on FAIL"},
    {"save", true, "write the run bundle (.npy arrays and meta.json) into DIR"},
    {"num-splits", true,
     "fwd_splitkv, fwd_paged: key splits (default: the plan's rule)"},
    {"descale", true,
     "fp8: descale factors Q,K,V of the inputs (default 0.5,0.25,2: "
     "distinct, so --check catches one dropped or swapped)"},
    {"page-size", true,
     "fwd_paged, append_kv: rows per page, a power of two (default 16)"},
    {"cache-len", true,
     "fwd_paged, append_kv: each sequence's cached keys; one value: every "
     "sequence"},
    {"new-tokens", true,
     "append_kv: rows appended to each sequence (default 1)"},
    {"rotary", true, "append_kv: rotary form interleaved|half|none"},
    {"rotary-dim", true, "append_kv: leading elements rotated (default d)"},
    {"rotate-q", false, "append_kv: rotate Q too"},
    {"dropout-p", true,
     "dropout=1: the probability of dropping each attention probability, "
     "in [0, 1) (default 0.1)"},
    {"dropout-seed", true,
     "dropout=1: the Philox seed of the keep-mask, 0 to 2^63-1 (default "
     "--seed)"},
    {"dropout-offset", true,
     "dropout=1: the Philox offset (a stream of the seed), 0 to 2^32-1 "
     "(default 0)"},
    {"variant-tensor", true, kVariantTensorFlagHelp, /*repeatable=*/true},
    {"bias-broadcast", true,
     "bias=elementwise: the bias's shape full [B,H,Sq,Sk] (default), "
     "batch [1,H,Sq,Sk], heads [B,1,Sq,Sk] or keys [B,1,1,Sk] (key padding)"},
};

struct FamilyFlag {
  const char *flag;
  std::initializer_list<Family> families;
};
const FamilyFlag kFamilyFlags[] = {
    {"num-splits", {Family::FwdSplitKv, Family::FwdPaged}},
    {"page-size", {Family::FwdPaged, Family::AppendKv}},
    {"cache-len", {Family::FwdPaged, Family::AppendKv}},
    {"new-tokens", {Family::AppendKv}},
    {"rotary", {Family::AppendKv}},
    {"rotary-dim", {Family::AppendKv}},
    {"rotate-q", {Family::AppendKv}},
};
/// Pages no sequence uses in the pools `run` lays out: runs fill them with
/// NaN, so a stray read shows.
constexpr int64_t kSparePages = 1;
/// vLLM's default block size.
constexpr int64_t kDefaultPageSize = 16;
constexpr int64_t kMaxNumSplits = 256;
/// Gemma 2's attention softcap: what a softcap=1 spec runs with by default.
constexpr float kDefaultSoftcap = 50.0f;
} // namespace

llvm::ArrayRef<OptionSpec> fmhajit::runFlags() {
  static const std::vector<OptionSpec> flags = [] {
    std::vector<OptionSpec> all(problemFlags().begin(), problemFlags().end());
    all.insert(all.end(), std::begin(kRunOnlyFlags), std::end(kRunOnlyFlags));
    return all;
  }();
  return flags;
}

static void checkApplicable(const Args &args, Family family,
                            ErrorList &errors) {
  for (const FamilyFlag &f : kFamilyFlags) {
    if (!args.has(f.flag) || llvm::is_contained(f.families, family))
      continue;
    std::vector<std::string> names;
    for (Family taker : f.families)
      names.push_back(keyOf(taker).str());
    errors.add(ErrorKind::Usage, "--" + Twine(f.flag) +
                                     " is a flag of family " +
                                     llvm::join(names, ", ") +
                                     "; this spec has family " + keyOf(family));
  }
}

// The problem's features are the spec's: the pinned kernel must compute them.
static void applySpecFeatures(const KernelSpec &spec, api::Problem &p) {
  p.dtype = publicDType(spec.dtype);
  if (spec.out)
    p.outDtype = publicDType(*spec.out);
  p.headDim = spec.d;
  p.headDimV = spec.headDimV();
  p.mask = publicMask(spec.mask);
  p.alibi = spec.bias == Bias::Alibi;
  p.sink = spec.sink; // the harness draws the sinks (ForwardCase::make)
  p.bias = spec.bias == Bias::Elementwise; // and the bias
  p.wantLse = spec.lse;
  p.dropout = spec.dropout; // p, seed and offset: RunRequest::dropout
  if (spec.softcap && p.softcap == 0)
    p.softcap = kDefaultSoftcap;
}

// Flags that only make sense with a spec feature: each mismatch is noted
// and the flag dropped, so the API still reports the problem's other
// faults and the user sees every problem at once.
static void checkAgainstSpec(const Args &args, const KernelSpec &spec,
                             RunRequest &r) {
  if (args.has("softcap") && !spec.softcap) {
    r.specMismatches.push_back("--softcap needs a spec with softcap=1");
    r.problem.softcap = 0;
  }
  if (args.has("window") && spec.mask != Mask::Window) {
    r.specMismatches.push_back(
        "--window needs a spec with mask=window; this spec has mask=" +
        keyOf(spec.mask).str());
    r.problem.windowLeft = r.problem.windowRight = -1;
  }
  bool varlenFlags = args.has("varlen-q") || args.has("varlen-k");
  if (varlenFlags != spec.varlen)
    r.specMismatches.push_back(
        spec.varlen ? "a varlen=1 spec needs --varlen-q and --varlen-k"
                    : "--varlen-q/--varlen-k need a spec with varlen=1");
}

/// --cache-len: one length per sequence, or one for every sequence of
/// --batch; without it \p fallback for each.
static llvm::Expected<std::vector<int32_t>>
cacheLengths(const Args &args, int64_t batch, int64_t fallback, int64_t min) {
  std::optional<std::string> text = args.get("cache-len");
  if (!text)
    return std::vector<int32_t>(size_t(std::max<int64_t>(batch, 0)),
                                int32_t(fallback));
  auto lens = parseLengths("cache-len", *text, min, kMaxFlagLength);
  if (!lens)
    return lens.takeError();
  if (lens->size() == 1 && batch > 1)
    lens->assign(size_t(batch), lens->front());
  else if (args.has("batch") && batch != int64_t(lens->size()))
    return makeError(ErrorKind::Usage,
                     "--batch " + Twine(batch) + " does not match the " +
                         Twine(lens->size()) + " --cache-len lengths");
  return std::vector<int32_t>(lens->begin(), lens->end());
}

static llvm::Expected<int64_t> pageSizeFlag(const Args &args) {
  auto size = args.getInt("page-size", 1, int64_t(1) << 20);
  if (!size)
    return size.takeError();
  return size->value_or(kDefaultPageSize);
}

static llvm::Error readPaged(const Args &args, api::Problem &p) {
  auto lens = cacheLengths(args, p.batch, p.seqlenK ? p.seqlenK : p.seqlenQ, 1);
  if (!lens)
    return lens.takeError();
  auto pageSize = pageSizeFlag(args);
  if (!pageSize)
    return pageSize.takeError();
  p.batch = int64_t(lens->size());
  p.seqlensK = std::move(*lens);
  layOutPages(p.pagesKv, p.seqlensK, *pageSize, kSparePages);
  return llvm::Error::success();
}

static llvm::Error readRotary(const Args &args, api::AppendProblem &a) {
  if (std::optional<std::string> text = args.get("rotary")) {
    if (*text == "interleaved")
      a.rotary = api::Rotary::Interleaved;
    else if (*text == "half")
      a.rotary = api::Rotary::Half;
    else if (*text != "none")
      return makeError(ErrorKind::Usage,
                       "--rotary " + *text + ": use interleaved, half or none");
  }
  auto dim = args.getInt("rotary-dim", 2, 1024);
  if (!dim)
    return dim.takeError();
  a.rotaryDim = dim->value_or(0);
  a.rotateQ = args.has("rotate-q");
  return llvm::Error::success();
}

// An append to caches with room for the new rows: paged with --page-size,
// else contiguous with one spare row per sequence.
static llvm::Error readAppend(const Args &args, const KernelSpec &spec,
                              RunRequest &r) {
  api::AppendProblem &a = r.append;
  const api::Problem &p = r.problem;
  auto tokens = args.getInt("new-tokens", 1, kMaxFlagLength);
  if (!tokens)
    return tokens.takeError();
  auto lens = cacheLengths(args, p.batch, 0, 0);
  if (!lens)
    return lens.takeError();
  a.batch = int64_t(lens->size());
  a.headsQ = p.headsQ, a.headsKv = p.headsKv ? p.headsKv : p.headsQ;
  a.newTokens = tokens->value_or(1);
  a.headDim = spec.d, a.headDimV = spec.headDimV(),
  a.dtype = publicDType(spec.dtype);
  a.device = p.device, a.seqlens = *lens;
  std::vector<int32_t> after(*lens);
  for (int32_t &len : after)
    len += int32_t(a.newTokens);
  if (args.has("page-size")) {
    auto pageSize = pageSizeFlag(args);
    if (!pageSize)
      return pageSize.takeError();
    layOutPages(a.pagesKv, after, *pageSize, kSparePages);
  } else {
    a.capacity = (after.empty() ? 0 : *llvm::max_element(after)) + 1;
  }
  return readRotary(args, a);
}

static void readRunFlags(const Args &args, RunRequest &r, ErrorList &errors) {
  if (auto seed = args.getInt("seed", 0, INT64_MAX); !seed)
    errors.add(seed.takeError());
  else if (*seed)
    r.seed = uint64_t(**seed);
  if (auto iters = args.getInt("iters", 1, 1000000); !iters)
    errors.add(iters.takeError());
  else if (*iters)
    r.iterations = unsigned(**iters);
  if (auto splits = args.getInt("num-splits", 1, kMaxNumSplits); !splits)
    errors.add(splits.takeError());
  else if (*splits)
    r.options.numSplits = unsigned(**splits);
  r.numSplitsGiven = args.has("num-splits");
  if (std::optional<std::string> text = args.get("descale")) {
    llvm::SmallVector<llvm::StringRef, 3> parts;
    llvm::StringRef(*text).split(parts, ',');
    std::array<float, 3> factors{};
    bool ok = parts.size() == 3;
    for (size_t i = 0; ok && i < 3; ++i) {
      double v = 0;
      ok = !parts[i].trim().getAsDouble(v) && std::isfinite(v) && v > 0 &&
           v < 1e30;
      factors[i] = float(v);
    }
    if (ok)
      r.descales = factors;
    else
      errors.add(ErrorKind::Usage,
                 "--descale " + *text +
                     ": expected three positive numbers Q,K,V, e.g. 1,1,1");
  }
  r.check = args.has("check");
  r.saveDir = args.get("save");
}

static llvm::Error readFamily(const Args &args, RunRequest &r) {
  switch (r.spec.family) {
  case Family::Fwd:
  case Family::FwdSplitKv:
    return llvm::Error::success();
  case Family::FwdPaged:
    return readPaged(args, r.problem);
  case Family::AppendKv:
    return readAppend(args, r.spec, r);
  case Family::SplitKvCombine:
    return makeError(ErrorKind::Spec,
                     "splitkv_combine runs as the second kernel of a split-KV "
                     "plan: run family=fwd_splitkv, which checks both");
  case Family::BwdDqDkDv:
    return llvm::Error::success();
  case Family::BwdDotDoO:
  case Family::BwdConvertDq:
    return makeError(ErrorKind::Spec,
                     "family " + keyOf(r.spec.family) +
                         " runs as a step of the backward: run "
                         "family=bwd_dq_dk_dv, which runs bwd_dot_do_o first "
                         "and checks dQ, dK and dV");
  default:
    return makeError(ErrorKind::Unsupported,
                     "family " + keyOf(r.spec.family) +
                         " has no kernel to run yet; fmhajit "
                         "run takes fwd, fwd_splitkv, fwd_paged, append_kv and "
                         "bwd_dq_dk_dv "
                         "(docs/families.md)");
  }
}

// --bias-broadcast: which dims of [batch, headsQ, seqlenQ, seqlenK] the
// bias has; the others get stride 0.
static llvm::Error readBiasBroadcast(const Args &args, RunRequest &r) {
  std::optional<std::string> text = args.get("bias-broadcast");
  if (!text)
    return llvm::Error::success();
  if (r.spec.bias != Bias::Elementwise)
    return makeError(ErrorKind::Usage,
                     "--bias-broadcast needs a spec with bias=elementwise");
  api::Problem &p = r.problem;
  int64_t sq = p.seqlenQ, sk = p.seqlenK ? p.seqlenK : p.seqlenQ;
  api::BiasStrides full = api::BiasStrides::packed(p.headsQ, sq, sk);
  if (*text == "full")
    p.biasStrides = full;
  else if (*text == "batch")
    p.biasStrides = api::BiasStrides{0, full.head, sk, 1};
  else if (*text == "heads")
    p.biasStrides = api::BiasStrides{sq * sk, 0, sk, 1};
  else if (*text == "keys")
    p.biasStrides = api::BiasStrides{sk, 0, 0, 1};
  else
    return makeError(ErrorKind::Usage, "--bias-broadcast " + *text +
                                           ": use full, batch, heads or keys");
  return llvm::Error::success();
}

/// FlashAttention's usual attention dropout.
constexpr double kDefaultDropoutP = 0.1;

// --dropout-p/-seed/-offset: dropout's run-time arguments, for a dropout=1
// spec only.
static llvm::Error readDropout(const Args &args, RunRequest &r) {
  bool given = args.has("dropout-p") || args.has("dropout-seed") ||
               args.has("dropout-offset");
  if (!r.spec.dropout) {
    if (given)
      r.specMismatches.push_back(
          "--dropout-p, --dropout-seed and --dropout-offset need a spec with "
          "dropout=1");
    return llvm::Error::success();
  }
  api::Dropout d{float(kDefaultDropoutP), r.seed, 0};
  if (std::optional<std::string> text = args.get("dropout-p")) {
    double p = -1;
    if (llvm::StringRef(*text).trim().getAsDouble(p) || !(p >= 0 && p < 1))
      return makeError(ErrorKind::Usage,
                       "--dropout-p " + *text +
                           ": expected a probability in [0, 1), e.g. 0.1");
    d.p = std::min(float(p), std::nextafter(1.0f, 0.0f)); // < 1 in float too
  }
  auto seed = args.getInt("dropout-seed", 0, INT64_MAX);
  if (!seed)
    return seed.takeError();
  if (*seed)
    d.seed = uint64_t(**seed);
  auto offset = args.getInt("dropout-offset", 0, UINT32_MAX);
  if (!offset)
    return offset.takeError();
  if (*offset)
    d.offset = uint32_t(**offset);
  r.dropout = d;
  return llvm::Error::success();
}

llvm::Expected<RunRequest>
fmhajit::parseRunOptions(llvm::ArrayRef<const char *> argv) {
  auto args = Args::parse(argv, runFlags());
  if (!args)
    return args.takeError();
  if (args->positional().size() != 1)
    return makeError(
        ErrorKind::Usage,
        "run takes one SPEC, e.g. fmhajit run family=fwd,dtype=bf16,d=128");
  auto spec = parseSpec(args->positional()[0]);
  if (!spec)
    return spec.takeError();
  RunRequest r;
  r.spec = *spec;
  r.options.kernel = args->positional()[0];
  if (spec->target != "host")
    r.options.target = spec->target;
  ErrorList errors;
  checkApplicable(*args, spec->family, errors);
  readProblemFlags(*args, r.problem, errors);
  readPlacement(*args, r.problem, r.options, errors);
  readRunFlags(*args, r, errors);
  if (!errors.empty())
    return errors.take();
  if (llvm::Error err = pinVariant(r.spec, r.problem))
    return std::move(err);
  if (!r.spec.variant.empty()) // the pinned kernel carries the hash
    r.options.kernel = printSpec(r.spec);
  auto tensors = readVariantTensorFlags(*args, r.problem);
  if (!tensors)
    return tensors.takeError();
  r.variantTensors = std::move(*tensors);
  checkAgainstSpec(*args, *spec, r);
  applySpecFeatures(*spec, r.problem);
  if (llvm::Error err = readBiasBroadcast(*args, r))
    return std::move(err);
  if (llvm::Error err = readDropout(*args, r))
    return std::move(err);
  if (llvm::Error err = readFamily(*args, r))
    return std::move(err);
  return r;
}
