//===- PlanOptions.cpp - The flags of `fmhajit plan` ----------------------===//
#include "tools/fmhajit/PlanOptions.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/ProblemFlags.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>

using namespace fmhajit;
using llvm::StringRef;

static const OptionSpec kPlanOnlyFlags[] = {
    {"d", true, "Q/K head dim (default 128)"},
    {"dv", true, "V/O head dim (default --d)"},
    {"dtype", true, "fp32|fp16|bf16|fp8_e4m3|fp8_e5m2 (default bf16)"},
    {"out", true, "O's dtype (default: --dtype; fp8: bf16)"},
    {"mask", true,
     "none|causal|causal_br|window (default none; --window implies window)"},
    {"alibi", false, "ALiBi bias"},
    {"lse", false, "also write the log-sum-exp of each row"},
    {"dropout-p", true,
     "dropout on the probabilities when P > 0 (dropout=1 kernels, one "
     "pass); run's --dropout-p: P, the seed and the offset are run-time "
     "arguments, so only whether P is 0 changes the plan"},
    {"layout", true, "bshd|bhsd (default bshd)"},
    {"autotune", false,
     "time the candidates and keep the fastest (loads them)"},
    {"load", false, "compile and load the kernels, as a plan that runs would"},
    {"backward", false,
     "plan the backward pass (bwd_dot_do_o, bwd_dq_dk_dv[, bwd_convert_dq]) "
     "instead"},
    {"deterministic", false,
     "with --backward: bitwise-repeatable gradients (GPU: no atomics)"},
    {"page-size", true, "paged K/V: rows per page (with --cache-len)"},
    {"cache-len", true,
     "paged K/V: each sequence's keys L,L,... (with --page-size)"},
};

llvm::ArrayRef<OptionSpec> fmhajit::planFlags() {
  static const std::vector<OptionSpec> flags = [] {
    std::vector<OptionSpec> all(problemFlags().begin(), problemFlags().end());
    all.insert(all.end(), std::begin(kPlanOnlyFlags), std::end(kPlanOnlyFlags));
    return all;
  }();
  return flags;
}

static void readHeadDims(const Args &args, api::Problem &p, ErrorList &errors) {
  for (auto [flag, field] :
       {std::pair{"d", &p.headDim}, std::pair{"dv", &p.headDimV}}) {
    auto v = args.getInt(flag, 1, kMaxFlagLength);
    if (!v)
      errors.add(v.takeError());
    else if (*v)
      *field = **v;
  }
}

// A paged cache: --cache-len gives each sequence's keys (and the batch),
// the pool holds exactly their pages.
static void readPaged(const Args &args, api::Problem &p, ErrorList &errors) {
  auto page = args.getInt("page-size", 1, kMaxFlagLength);
  if (!page) {
    errors.add(page.takeError());
    return;
  }
  std::optional<std::string> text = args.get("cache-len");
  if (!*page && !text)
    return;
  if (!*page || !text) {
    errors.add(ErrorKind::Usage,
               "--page-size and --cache-len go together: a paged cache needs "
               "its page size and each sequence's keys");
    return;
  }
  auto lens = parseLengths("cache-len", *text, 1, INT32_MAX);
  if (!lens) {
    errors.add(lens.takeError());
    return;
  }
  p.seqlensK.assign(lens->begin(), lens->end());
  layOutPages(p.pagesKv, p.seqlensK, **page, 0);
  p.batch = int64_t(p.seqlensK.size());
}

template <typename E>
static std::optional<E> readKey(const Args &args, const char *flag,
                                ErrorList &errors) {
  std::optional<std::string> text = args.get(flag);
  if (!text)
    return std::nullopt;
  std::optional<E> value = parseKey<E>(*text);
  if (!value)
    errors.add(ErrorKind::Usage, "--" + llvm::Twine(flag) + " " + *text +
                                     ": use one of " + allKeys<E>());
  return value;
}

static void readFeatures(const Args &args, api::Problem &p, ErrorList &errors) {
  if (auto t = readKey<DType>(args, "dtype", errors))
    p.dtype = publicDType(*t);
  if (auto t = readKey<DType>(args, "out", errors))
    p.outDtype = publicDType(*t);
  if (auto m = readKey<Mask>(args, "mask", errors))
    p.mask = publicMask(*m);
  else if (args.has("window")) // a window alone implies the mask
    p.mask = api::Mask::Window;
  p.alibi = args.has("alibi");
  p.wantLse = args.has("lse");
  std::string layout = args.get("layout").value_or("bshd");
  if (layout == "bhsd")
    p.q = p.k = p.v = p.o = api::TensorLayout::bhsd();
  else if (layout != "bshd")
    errors.add(ErrorKind::Usage, "--layout " + layout + ": use bshd or bhsd");
}

// --dropout-p: as run's (RunOptions.cpp), in [0, 1); P > 0 plans with
// dropout, 0 without.
static void readDropout(const Args &args, api::Problem &p, ErrorList &errors) {
  std::optional<std::string> text = args.get("dropout-p");
  if (!text)
    return;
  double value = -1;
  if (StringRef(*text).trim().getAsDouble(value) || !(value >= 0 && value < 1))
    errors.add(ErrorKind::Usage,
               "--dropout-p " + *text +
                   ": expected a probability in [0, 1), e.g. 0.1");
  else
    p.dropout = value > 0;
}

static void readTuning(const Args &args, PlanRequest &r) {
  r.options.autotune = args.has("autotune");
  // Only choosing works for any target; running, and so timing, needs the
  // kernels loaded.
  r.options.load = args.has("load") || r.options.autotune;
}

llvm::Expected<PlanRequest>
fmhajit::parsePlanOptions(llvm::ArrayRef<const char *> argv) {
  auto args = Args::parse(argv, planFlags());
  if (!args)
    return args.takeError();
  if (!args->positional().empty())
    return makeError(ErrorKind::Usage,
                     "plan takes only flags, e.g. fmhajit plan --d 128 "
                     "--seqlen-q 1 --seqlen-k 4096");
  PlanRequest r;
  ErrorList errors;
  readProblemFlags(*args, r.problem, errors);
  readHeadDims(*args, r.problem, errors);
  readPaged(*args, r.problem, errors);
  readFeatures(*args, r.problem, errors);
  readDropout(*args, r.problem, errors);
  readPlacement(*args, r.problem, r.options, errors);
  readTuning(*args, r);
  r.backward = args->has("backward");
  r.options.deterministic = args->has("deterministic");
  if (r.options.deterministic && !r.backward)
    errors.add(ErrorKind::Usage, "--deterministic goes with --backward");
  if (!errors.empty())
    return errors.take();
  return r;
}
