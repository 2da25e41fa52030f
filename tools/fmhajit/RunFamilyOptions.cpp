//===- RunFamilyOptions.cpp - The flags of the multi-stage families -------===//
//
// --num-splits (fwd_splitkv, fwd_paged, splitkv_combine), --page-size and
// --cache-len (fwd_paged, append_kv), --new-tokens, --rotary, --rotary-dim
// and --rotate-q (append_kv). A flag given to a family that does not take
// it is a usage error, not silently ignored. Caches are laid out here:
// enough pages for every sequence plus one spare (docs/families.md).
//
//===----------------------------------------------------------------------===//
#include "runtime/api/SplitHeuristic.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/RunOptions.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace fmhajit;
using llvm::Twine;

namespace {
struct FamilyFlag {
  const char *flag;
  std::initializer_list<Family> families;
};
const FamilyFlag kFamilyFlags[] = {
    {"num-splits", {Family::FwdSplitKv, Family::FwdPaged, Family::SplitKvCombine}},
    {"page-size", {Family::FwdPaged, Family::AppendKv}},
    {"cache-len", {Family::FwdPaged, Family::AppendKv}},
    {"new-tokens", {Family::AppendKv}},
    {"rotary", {Family::AppendKv}},
    {"rotary-dim", {Family::AppendKv}},
    {"rotate-q", {Family::AppendKv}},
};
/// vLLM's default block size.
constexpr int64_t kDefaultPageSize = 16;
/// The most parts --num-splits accepts.
constexpr int64_t kMaxNumSplits = 256;
} // namespace

static void checkApplicable(const Args &args, Family family, ErrorList &errors) {
  for (const FamilyFlag &f : kFamilyFlags) {
    if (!args.has(f.flag) || llvm::is_contained(f.families, family))
      continue;
    std::vector<std::string> names;
    for (Family taker : f.families)
      names.push_back(keyOf(taker).str());
    errors.add(ErrorKind::Usage, "--" + Twine(f.flag) + " is a flag of family " +
                                     llvm::join(names, ", ") + "; this spec has family " +
                                     keyOf(family));
  }
}

/// --cache-len, or --seqlen-k (fwd_paged) / 0 (append_kv) for every sequence.
static llvm::Error readCacheLengths(const Args &args, RunOptions &o) {
  bool paged = o.spec.family == Family::FwdPaged;
  auto text = args.get("cache-len");
  if (!text) {
    o.family.cacheLens.assign(o.problem.batch, paged ? o.problem.seqlenK : 0);
    return llvm::Error::success();
  }
  auto lens = parseList("cache-len", *text, paged ? 1 : 0);
  if (!lens)
    return lens.takeError();
  if (args.has("batch") && o.problem.batch != static_cast<int64_t>(lens->size()))
    return makeError(ErrorKind::Usage, "--batch " + Twine(o.problem.batch) + " does not match the " +
                                           Twine(lens->size()) + " --cache-len lengths");
  o.family.cacheLens = std::move(*lens);
  o.problem.batch = static_cast<int64_t>(o.family.cacheLens.size());
  return llvm::Error::success();
}

/// Pages (or rows) for every sequence's \p lengths, plus one spare page (or
/// row) that no sequence uses: runs fill it with NaN so a stray read shows.
static llvm::Expected<KvCacheLayout> layoutCache(const Args &args, bool paged,
                                                 llvm::ArrayRef<int64_t> lengths) {
  int64_t longest = lengths.empty() ? 0 : *llvm::max_element(lengths);
  if (!paged)
    return KvCacheLayout::contiguous(longest + 1);
  auto size = args.getInt("page-size", 1, int64_t(1) << 20);
  if (!size)
    return size.takeError();
  int64_t pageSize = size->value_or(kDefaultPageSize);
  int64_t pages = 1;
  for (int64_t len : lengths)
    pages += (len + pageSize - 1) / pageSize;
  return KvCacheLayout::paged(pageSize, pages, std::max<int64_t>(1, (longest + pageSize - 1) / pageSize));
}

static llvm::Error readRotary(const Args &args, AppendKvProblem &a) {
  if (auto text = args.get("rotary")) {
    std::optional<RotaryForm> form = parseRotaryForm(*text);
    if (!form)
      return makeError(ErrorKind::Usage, "--rotary " + *text + ": use interleaved, half or none");
    a.rotary = *form;
  }
  auto dim = args.getInt("rotary-dim", 2, 1024);
  if (!dim)
    return dim.takeError();
  a.rotaryDim = dim->value_or(0);
  a.rotateQ = args.has("rotate-q");
  return llvm::Error::success();
}

static llvm::Error readAppend(const Args &args, RunOptions &o) {
  AppendKvProblem &a = o.family.append;
  a = AppendKvProblem::forSpec(o.spec);
  a.batch = o.problem.batch;
  a.headsQ = o.problem.headsQ;
  a.headsKv = o.problem.headsKv;
  auto tokens = args.getInt("new-tokens", 1, int64_t(1) << 30);
  if (!tokens)
    return tokens.takeError();
  a.newTokens = tokens->value_or(1);
  a.cacheLens = o.family.cacheLens;
  if (llvm::Error err = readRotary(args, a))
    return err;
  std::vector<int64_t> after(a.cacheLens);
  for (int64_t &len : after)
    len += a.newTokens;
  auto layout = layoutCache(args, args.has("page-size"), after);
  if (!layout)
    return layout.takeError();
  a.cache = o.family.cache = *layout;
  return a.validate(o.spec);
}

static llvm::Error readPaged(const Args &args, RunOptions &o) {
  auto layout = layoutCache(args, true, o.family.cacheLens);
  if (!layout)
    return layout.takeError();
  o.family.cache = *layout;
  PagedProblem paged = PagedProblem::make(o.spec, o.problem, o.family.cache, o.family.cacheLens);
  o.problem = paged.attention;
  return paged.validate(o.spec);
}

llvm::Error fmhajit::readFamilyFlags(const Args &args, RunOptions &o) {
  ErrorList errors;
  checkApplicable(args, o.spec.family, errors);
  if (auto splits = args.getInt("num-splits", 1, kMaxNumSplits); !splits)
    errors.add(splits.takeError());
  else
    o.family.numSplits = static_cast<unsigned>(splits->value_or(0));
  if (!errors.empty())
    return errors.take();
  switch (o.spec.family) {
  case Family::FwdPaged:
    if (llvm::Error err = readCacheLengths(args, o))
      return err;
    return readPaged(args, o);
  case Family::AppendKv:
    if (llvm::Error err = readCacheLengths(args, o))
      return err;
    return readAppend(args, o);
  default:
    return llvm::Error::success();
  }
}
