//===- RunOptions.cpp - The flags of `fmhajit run` ------------------------===//
#include "tools/fmhajit/RunOptions.h"
#include "runtime/device/CudaDriver.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tools/fmhajit/Args.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>

using namespace fmhajit;
using llvm::StringRef;

static const OptionSpec kRunFlags[] = {
    {"batch", true},    {"heads", true},    {"heads-kv", true}, {"seqlen-q", true},
    {"seqlen-k", true}, {"varlen-q", true}, {"varlen-k", true}, {"scale", true},
    {"softcap", true},  {"window", true},   {"seed", true},     {"threads", true},
    {"iters", true},    {"check", false},   {"save", true},     {"device", true},
    // The multi-stage families: RunFamilyOptions.cpp.
    {"num-splits", true}, {"page-size", true}, {"cache-len", true}, {"new-tokens", true},
    {"rotary", true},     {"rotary-dim", true}, {"rotate-q", false}};

static constexpr int64_t kMaxLength = int64_t(1) << 30;
/// Gemma 2's attention softcap: what a softcap=1 spec runs with by default.
static constexpr float kDefaultSoftcap = 50.0f;

llvm::Expected<std::vector<int64_t>> fmhajit::parseList(StringRef flag, StringRef text,
                                                       int64_t min) {
  std::vector<int64_t> out;
  llvm::SmallVector<StringRef, 16> parts;
  text.split(parts, ',');
  for (StringRef part : parts) {
    int64_t v = 0;
    if (part.trim().getAsInteger(10, v) || v < min || v > kMaxLength)
      return makeError(ErrorKind::Usage, "--" + flag + " " + text +
                                             ": expected comma-separated whole numbers from " +
                                             llvm::Twine(min) + " to " + llvm::Twine(kMaxLength));
    out.push_back(v);
  }
  return out;
}

static llvm::Expected<float> parseFloat(StringRef flag, StringRef text) {
  double v = 0;
  if (text.getAsDouble(v) || !std::isfinite(v) || v <= 0 || v > 1e30)
    return makeError(ErrorKind::Usage, "--" + flag + " " + text + ": expected a positive number");
  return static_cast<float>(v);
}

// Copies integer flags into the problem; each bad one is its own error.
// Only the syntax is checked here (a usage error, exit 2); whether the
// numbers make a valid problem is AttentionProblem::validate's call (exit 1).
static void readSizes(const Args &args, AttentionProblem &p, ErrorList &errors) {
  struct Size { const char *flag; int64_t *field; };
  const Size sizes[] = {{"batch", &p.batch},       {"heads", &p.headsQ},
                        {"heads-kv", &p.headsKv},  {"seqlen-q", &p.seqlenQ},
                        {"seqlen-k", &p.seqlenK}};
  for (const Size &s : sizes) {
    auto v = args.getInt(s.flag, INT64_MIN, INT64_MAX);
    if (!v)
      errors.add(v.takeError());
    else if (*v)
      *s.field = **v;
  }
  if (!args.has("heads-kv"))
    p.headsKv = p.headsQ;
  if (!args.has("seqlen-k"))
    p.seqlenK = p.seqlenQ;
}

static void readVarlen(const Args &args, AttentionProblem &p, ErrorList &errors) {
  for (auto [flag, field] : {std::pair{"varlen-q", &p.seqlensQ}, std::pair{"varlen-k", &p.seqlensK}}) {
    if (auto text = args.get(flag)) {
      auto list = parseList(flag, *text, 0);
      if (list)
        *field = *list;
      else
        errors.add(list.takeError());
    }
  }
  if (p.isVarlen())
    p.batch = static_cast<int64_t>(p.seqlensQ.size());
}

static void readScores(const Args &args, AttentionProblem &p, ErrorList &errors) {
  for (auto [flag, field] : {std::pair{"scale", &p.scale}, std::pair{"softcap", &p.softcap}})
    if (auto text = args.get(flag)) {
      auto v = parseFloat(flag, *text);
      if (v)
        *field = *v;
      else
        errors.add(v.takeError());
    }
  if (auto text = args.get("window")) {
    auto list = parseList("window", *text, -1);
    if (!list)
      errors.add(list.takeError());
    else if (list->size() != 2)
      errors.add(ErrorKind::Usage, "--window " + *text + ": expected LEFT,RIGHT (-1: unbounded)");
    else {
      p.windowLeft = (*list)[0];
      p.windowRight = (*list)[1];
    }
  }
}

static void readRunFlags(const Args &args, RunOptions &o, ErrorList &errors) {
  if (auto seed = args.getInt("seed", 0, INT64_MAX); !seed)
    errors.add(seed.takeError());
  else if (*seed)
    o.seed = static_cast<uint64_t>(**seed);
  if (auto threads = args.getInt("threads", 1, 1024); !threads)
    errors.add(threads.takeError());
  else if (*threads)
    o.threads = static_cast<unsigned>(**threads);
  if (auto iters = args.getInt("iters", 1, 1000000); !iters)
    errors.add(iters.takeError());
  else if (*iters)
    o.iterations = static_cast<unsigned>(**iters);
  o.check = args.has("check");
  o.saveDir = args.get("save");
  o.device = args.get("device").value_or("host");
  if (o.device != "host" && o.device != "cuda" && o.device != "hip")
    errors.add(ErrorKind::Usage, "--device " + o.device + ": use host, cuda or hip");
}

// With --device cuda, a spec left at the default target (host) runs on the
// GPU's own target, resolved for it: pipeline=auto and the tile defaults
// become the GPU's. An explicit GPU target is kept as written.
static llvm::Error pickDeviceTarget(const Args &args, KernelSpec &spec) {
  if (args.get("device") != "cuda" || spec.target != "host")
    return llvm::Error::success();
  auto driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  const CudaDeviceInfo &device = driver->device();
  if (!device.target)
    return makeError(ErrorKind::Unsupported,
                     device.name + " has compute capability " + device.cc.str() +
                         ", which no fmhajit target runs on; fmhajit needs 8.0 or newer");
  spec.target = *device.target;
  return llvm::Error::success();
}

llvm::Expected<RunOptions> fmhajit::parseRunOptions(llvm::ArrayRef<const char *> argv) {
  auto args = Args::parse(argv, kRunFlags);
  if (!args)
    return args.takeError();
  if (args->positional().size() != 1)
    return makeError(ErrorKind::Usage, "run takes one SPEC, e.g. fmhajit run family=fwd,dtype=bf16,d=128");
  auto parsed = parseSpec(args->positional()[0]);
  if (!parsed)
    return parsed.takeError();
  if (llvm::Error err = pickDeviceTarget(*args, *parsed))
    return std::move(err);
  auto spec = validateSpec(*parsed);
  if (!spec)
    return spec.takeError();
  RunOptions o;
  o.spec = *spec;
  o.problem = AttentionProblem::forSpec(o.spec);
  ErrorList errors;
  readSizes(*args, o.problem, errors);
  readVarlen(*args, o.problem, errors);
  if (o.spec.softcap)
    o.problem.softcap = kDefaultSoftcap;
  readScores(*args, o.problem, errors);
  readRunFlags(*args, o, errors);
  if (!errors.empty())
    return errors.take();
  if (llvm::Error err = readFamilyFlags(*args, o))
    return std::move(err);
  // A well-formed command asking for an impossible problem is an invalid
  // input (exit 1), like an invalid spec; only malformed commands exit 2.
  if (llvm::Error err = o.problem.validate(o.spec))
    return withKind(std::move(err), ErrorKind::Spec);
  return o;
}
