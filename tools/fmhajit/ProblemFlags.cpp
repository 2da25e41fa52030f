//===- ProblemFlags.cpp - The problem flags `run` and `plan` share --------===//
#include "tools/fmhajit/ProblemFlags.h"
#include "tools/fmhajit/VariantFlag.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>

using namespace fmhajit;
using llvm::StringRef;
using llvm::Twine;

static const OptionSpec kProblemFlags[] = {
    {"batch", true, "sequences (default 1)"},
    {"heads", true, "query heads (default 1)"},
    {"heads-kv", true,
     "K/V heads, dividing --heads (GQA, MQA); default --heads"},
    {"seqlen-q", true, "query length of every sequence (default 1)"},
    {"seqlen-k", true, "key length of every sequence (default --seqlen-q)"},
    {"varlen-q", true, "per-sequence query lengths L,L,... (varlen)"},
    {"varlen-k", true, "per-sequence key lengths L,L,... (varlen)"},
    {"window", true, "sliding window LEFT,RIGHT; -1 is unbounded"},
    {"scale", true, "softmax scale (default 1/sqrt(d))"},
    {"softcap", true, "cap c in c*tanh(s/c) (default 50 for softcap=1)"},
    {"device", true, "host|cuda|hip (default host)"},
    {"target", true,
     "the fmhajit target to compile for (default: the device's)"},
    {"threads", true, "host worker threads (default: every hardware thread)"},
    {"variant", true, kVariantFlagHelp},
    {"no-block-sparsity", false,
     "with a mask_mod variant: no block map; every key tile of the mask's "
     "range is computed, mask_mod on each element (to measure the map)"},
};

llvm::ArrayRef<OptionSpec> fmhajit::problemFlags() { return kProblemFlags; }

llvm::Expected<std::vector<int64_t>> fmhajit::parseLengths(StringRef flag,
                                                           StringRef text,
                                                           int64_t min,
                                                           int64_t max) {
  std::vector<int64_t> out;
  llvm::SmallVector<StringRef, 16> parts;
  text.split(parts, ',');
  for (StringRef part : parts) {
    int64_t v = 0;
    if (part.trim().getAsInteger(10, v) || v < min || v > max)
      return makeError(ErrorKind::Usage,
                       "--" + flag + " " + text +
                           ": expected comma-separated whole numbers from " +
                           Twine(min) + " to " + Twine(max));
    out.push_back(v);
  }
  return out;
}

// Any whole number passes here: a negative length is a problem the API
// names (exit 1), not a malformed command.
static void readSizes(const Args &args, api::Problem &p, ErrorList &errors) {
  struct Size {
    const char *flag;
    int64_t *field;
  };
  const Size sizes[] = {{"batch", &p.batch},
                        {"heads", &p.headsQ},
                        {"heads-kv", &p.headsKv},
                        {"seqlen-q", &p.seqlenQ},
                        {"seqlen-k", &p.seqlenK}};
  for (const Size &s : sizes) {
    auto v = args.getInt(s.flag, -kMaxFlagLength, kMaxFlagLength);
    if (!v)
      errors.add(v.takeError());
    else if (*v)
      *s.field = **v;
  }
}

// --varlen-q/k take per-sequence lengths; the API takes cumulative ones.
static void readVarlen(const Args &args, api::Problem &p, ErrorList &errors) {
  for (auto [flag, field] : {std::pair{"varlen-q", &p.cuSeqlensQ},
                             std::pair{"varlen-k", &p.cuSeqlensK}}) {
    std::optional<std::string> text = args.get(flag);
    if (!text)
      continue;
    auto lens = parseLengths(flag, *text, 0, kMaxFlagLength);
    if (!lens) {
      errors.add(lens.takeError());
      continue;
    }
    field->assign(1, 0);
    for (int64_t len : *lens)
      field->push_back(
          int32_t(std::min<int64_t>(field->back() + len, INT32_MAX)));
  }
  if (!p.cuSeqlensQ.empty())
    p.batch = int64_t(p.cuSeqlensQ.size()) - 1;
}

static std::optional<float> readPositive(const Args &args, const char *flag,
                                         ErrorList &errors) {
  std::optional<std::string> text = args.get(flag);
  double v = 0;
  if (!text)
    return std::nullopt;
  if (StringRef(*text).getAsDouble(v) || !std::isfinite(v) || v <= 0 ||
      v > 1e30) {
    errors.add(ErrorKind::Usage, "--" + Twine(flag) + " " + *text +
                                     ": expected a positive number");
    return std::nullopt;
  }
  return float(v);
}

static void readWindow(const Args &args, api::Problem &p, ErrorList &errors) {
  std::optional<std::string> text = args.get("window");
  if (!text)
    return;
  auto sides = parseLengths("window", *text, -1, kMaxFlagLength);
  if (!sides || sides->size() != 2) {
    if (!sides)
      llvm::consumeError(sides.takeError());
    errors.add(ErrorKind::Usage,
               "--window " + *text + ": expected LEFT,RIGHT (-1: unbounded)");
    return;
  }
  p.windowLeft = (*sides)[0];
  p.windowRight = (*sides)[1];
}

void fmhajit::readProblemFlags(const Args &args, api::Problem &p,
                               ErrorList &errors) {
  readSizes(args, p, errors);
  readVarlen(args, p, errors);
  readWindow(args, p, errors);
  if (auto c = readPositive(args, "softcap", errors))
    p.softcap = *c;
  if (auto s = readPositive(args, "scale", errors))
    p.scale = *s;
  readVariantFlag(args, p, errors);
}

void fmhajit::readPlacement(const Args &args, api::Problem &p,
                            api::Options &options, ErrorList &errors) {
  std::string device = args.get("device").value_or("host");
  if (device == "cuda")
    p.device = api::Device::Cuda;
  else if (device == "hip")
    p.device = api::Device::Hip;
  else if (device != "host")
    errors.add(ErrorKind::Usage,
               "--device " + device + ": use host, cuda or hip");
  if (std::optional<std::string> target = args.get("target"))
    options.target = *target;
  options.blockSparsity = !args.has("no-block-sparsity");
  if (auto threads = args.getInt("threads", 1, 1024); !threads)
    errors.add(threads.takeError());
  else if (*threads)
    options.threads = unsigned(**threads);
}

void fmhajit::layOutPages(api::PagedKv &pages, llvm::ArrayRef<int32_t> lengths,
                          int64_t pageSize, int64_t sparePages) {
  pages.pageSize = pageSize;
  pages.numPages = sparePages;
  pages.maxPagesPerSeq = 0;
  for (int32_t len : lengths) {
    int64_t n = (len + pageSize - 1) / pageSize;
    pages.numPages += n;
    pages.maxPagesPerSeq = std::max(pages.maxPagesPerSeq, n);
  }
}

api::DType fmhajit::publicDType(DType t) {
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

api::Mask fmhajit::publicMask(Mask m) {
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
