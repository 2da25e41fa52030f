//===- PlanOptions.cpp - The flags of `fmhajit plan` ----------------------===//
#include "tools/fmhajit/PlanOptions.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "tools/fmhajit/Args.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>

using namespace fmhajit;
using llvm::StringRef;

static const OptionSpec kPlanFlags[] = {
    {"batch", true},    {"heads", true},     {"heads-kv", true}, {"seqlen-q", true},
    {"seqlen-k", true}, {"varlen-q", true},  {"varlen-k", true}, {"d", true},
    {"dv", true},       {"dtype", true},     {"out", true},      {"mask", true},
    {"window", true},   {"softcap", true},   {"alibi", false},   {"lse", false},
    {"scale", true},    {"layout", true},    {"device", true},   {"target", true},
    {"threads", true},  {"autotune", false}, {"load", false},   {"page-size", true},
    {"cache-len", true}};

static constexpr int64_t kMaxLength = int64_t(1) << 30;

static void readInts(const Args &args, api::Problem &p, ErrorList &errors) {
  struct Size {
    const char *flag;
    int64_t *field;
  };
  const Size sizes[] = {{"batch", &p.batch},      {"heads", &p.headsQ},
                        {"heads-kv", &p.headsKv}, {"seqlen-q", &p.seqlenQ},
                        {"seqlen-k", &p.seqlenK}, {"d", &p.headDim},
                        {"dv", &p.headDimV}};
  for (const Size &s : sizes) {
    auto v = args.getInt(s.flag, 1, kMaxLength);
    if (!v)
      errors.add(v.takeError());
    else if (*v)
      *s.field = **v;
  }
}

// --varlen-q/k take per-sequence lengths; the API takes cumulative ones.
static void readVarlen(const Args &args, api::Problem &p, ErrorList &errors) {
  for (auto [flag, field] :
       {std::pair{"varlen-q", &p.cuSeqlensQ}, std::pair{"varlen-k", &p.cuSeqlensK}}) {
    std::optional<std::string> text = args.get(flag);
    if (!text)
      continue;
    llvm::SmallVector<StringRef, 16> parts;
    StringRef(*text).split(parts, ',');
    field->assign(1, 0);
    for (StringRef part : parts) {
      int64_t len = 0;
      if (part.trim().getAsInteger(10, len) || len < 0 || field->back() + len > INT32_MAX) {
        errors.add(ErrorKind::Usage, "--" + llvm::Twine(flag) + " " + *text +
                                         ": expected comma-separated lengths >= 0");
        break;
      }
      field->push_back(int32_t(field->back() + len));
    }
  }
  if (!p.cuSeqlensQ.empty())
    p.batch = int64_t(p.cuSeqlensQ.size()) - 1;
}

// A paged cache as `fmhajit run` builds one: --cache-len gives each
// sequence's keys (and the batch), the pool holds exactly their pages.
static void readPaged(const Args &args, api::Problem &p, ErrorList &errors) {
  auto page = args.getInt("page-size", 1, kMaxLength);
  if (!page) {
    errors.add(page.takeError());
    return;
  }
  std::optional<std::string> text = args.get("cache-len");
  if (!*page && !text)
    return;
  if (!*page || !text) {
    errors.add(ErrorKind::Usage, "--page-size and --cache-len go together: a paged cache needs "
                                 "its page size and each sequence's keys");
    return;
  }
  p.pagesKv.pageSize = **page;
  llvm::SmallVector<StringRef, 16> parts;
  StringRef(*text).split(parts, ',');
  for (StringRef part : parts) {
    int64_t len = 0;
    if (part.trim().getAsInteger(10, len) || len < 1 || len > INT32_MAX) {
      errors.add(ErrorKind::Usage, "--cache-len " + *text + ": expected comma-separated lengths >= 1");
      return;
    }
    int64_t pages = (len + p.pagesKv.pageSize - 1) / p.pagesKv.pageSize;
    p.seqlensK.push_back(int32_t(len));
    p.pagesKv.numPages += pages;
    p.pagesKv.maxPagesPerSeq = std::max(p.pagesKv.maxPagesPerSeq, pages);
  }
  p.batch = int64_t(p.seqlensK.size());
}

template <typename E>
static std::optional<E> readKey(const Args &args, const char *flag, ErrorList &errors) {
  std::optional<std::string> text = args.get(flag);
  if (!text)
    return std::nullopt;
  std::optional<E> value = parseKey<E>(*text);
  if (!value)
    errors.add(ErrorKind::Usage,
               "--" + llvm::Twine(flag) + " " + *text + ": use one of " + allKeys<E>());
  return value;
}

static api::DType publicDType(DType t) {
  switch (t) {
  case DType::F32:
    return api::DType::F32;
  case DType::F16:
    return api::DType::F16;
  case DType::BF16:
    return api::DType::BF16;
  case DType::F8E4M3:
    return api::DType::F8E4M3;
  case DType::F8E5M2:
    return api::DType::F8E5M2;
  }
  return api::DType::F32;
}

static api::Mask publicMask(Mask m) {
  switch (m) {
  case Mask::None:
    return api::Mask::None;
  case Mask::Causal:
    return api::Mask::Causal;
  case Mask::CausalBr:
    return api::Mask::CausalBottomRight;
  case Mask::Window:
    return api::Mask::Window;
  }
  return api::Mask::None;
}

static std::optional<float> readFloat(const Args &args, const char *flag, ErrorList &errors) {
  std::optional<std::string> text = args.get(flag);
  double v = 0;
  if (!text)
    return std::nullopt;
  if (StringRef(*text).getAsDouble(v) || !std::isfinite(v) || v <= 0) {
    errors.add(ErrorKind::Usage,
               "--" + llvm::Twine(flag) + " " + *text + ": expected a positive number");
    return std::nullopt;
  }
  return float(v);
}

// Window sides as `fmhajit run` takes them; a window alone implies the mask.
static void readWindow(const Args &args, api::Problem &p, ErrorList &errors) {
  std::optional<std::string> text = args.get("window");
  if (!text)
    return;
  auto [left, right] = StringRef(*text).split(',');
  if (left.trim().getAsInteger(10, p.windowLeft) || right.trim().getAsInteger(10, p.windowRight) ||
      p.windowLeft < -1 || p.windowRight < -1)
    errors.add(ErrorKind::Usage, "--window " + *text + ": expected LEFT,RIGHT (-1: unbounded)");
  if (!args.has("mask"))
    p.mask = api::Mask::Window;
}

static void readFeatures(const Args &args, api::Problem &p, ErrorList &errors) {
  if (auto t = readKey<DType>(args, "dtype", errors))
    p.dtype = publicDType(*t);
  if (auto t = readKey<DType>(args, "out", errors))
    p.outDtype = publicDType(*t);
  if (auto m = readKey<Mask>(args, "mask", errors))
    p.mask = publicMask(*m);
  readWindow(args, p, errors);
  if (auto c = readFloat(args, "softcap", errors))
    p.softcap = *c;
  if (auto s = readFloat(args, "scale", errors))
    p.scale = *s;
  p.alibi = args.has("alibi");
  p.wantLse = args.has("lse");
  std::string layout = args.get("layout").value_or("bshd");
  if (layout == "bhsd")
    p.q = p.k = p.v = p.o = api::TensorLayout::bhsd();
  else if (layout != "bshd")
    errors.add(ErrorKind::Usage, "--layout " + layout + ": use bshd or bhsd");
}

static void readPlacement(const Args &args, PlanRequest &r, ErrorList &errors) {
  std::string device = args.get("device").value_or("host");
  if (device == "cuda")
    r.problem.device = api::Device::Cuda;
  else if (device == "hip")
    r.problem.device = api::Device::Hip;
  else if (device != "host")
    errors.add(ErrorKind::Usage, "--device " + device + ": use host, cuda or hip");
  r.options.target = args.get("target").value_or("");
  if (auto threads = args.getInt("threads", 1, 1024); !threads)
    errors.add(threads.takeError());
  else if (*threads)
    r.options.threads = unsigned(**threads);
  r.options.autotune = args.has("autotune");
  // Only choosing works for any target; running, and so timing, needs the
  // kernels loaded.
  r.options.load = args.has("load") || r.options.autotune;
}

llvm::Expected<PlanRequest> fmhajit::parsePlanOptions(llvm::ArrayRef<const char *> argv) {
  auto args = Args::parse(argv, kPlanFlags);
  if (!args)
    return args.takeError();
  if (!args->positional().empty())
    return makeError(ErrorKind::Usage, "plan takes only flags, e.g. fmhajit plan --d 128 "
                                       "--seqlen-q 1 --seqlen-k 4096");
  PlanRequest r;
  ErrorList errors;
  readInts(*args, r.problem, errors);
  readVarlen(*args, r.problem, errors);
  readPaged(*args, r.problem, errors);
  readFeatures(*args, r.problem, errors);
  readPlacement(*args, r, errors);
  if (!errors.empty())
    return errors.take();
  return r;
}
