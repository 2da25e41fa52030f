//===- AppendLowering.cpp - A public AppendProblem in the library's terms -===//
#include "runtime/api/AppendLowering.h"
#include "runtime/api/PagedLowering.h"
#include "runtime/api/ProblemLowering.h"
#include "specs/Keys.h"
#include "specs/Validate.h"
#include <cmath>

using namespace fmhajit;
using llvm::Twine;

RotaryForm fmhajit::toRotaryForm(api::Rotary rotary) {
  switch (rotary) {
  case api::Rotary::None:
    return RotaryForm::None;
  case api::Rotary::Interleaved:
    return RotaryForm::Interleaved;
  case api::Rotary::Half:
    return RotaryForm::Half;
  }
  return RotaryForm::None;
}

static int64_t headsQOf(const api::AppendProblem &p) {
  return p.headsQ ? p.headsQ : p.headsKv;
}

static void checkSizes(const api::AppendProblem &p, ErrorList &errors) {
  if (p.batch < 1 || p.newTokens < 1)
    errors.add(ErrorKind::Usage, "batch (" + Twine(p.batch) +
                                     ") and newTokens (" + Twine(p.newTokens) +
                                     ") must both be >= 1");
  if (p.headsKv < 1 || headsQOf(p) % p.headsKv != 0)
    errors.add(ErrorKind::Usage, "headsKv " + Twine(p.headsKv) +
                                     " must be >= 1 and divide headsQ " +
                                     Twine(headsQOf(p)));
}

// The cache: pages or a capacity, never both.
static void checkCache(const api::AppendProblem &p, ErrorList &errors) {
  if (p.pagesKv.enabled()) {
    checkPages(p.pagesKv, errors);
    if (p.capacity != 0)
      errors.add(ErrorKind::Usage,
                 "capacity is set but the cache is paged (pagesKv.pageSize " +
                     Twine(p.pagesKv.pageSize) +
                     "): leave capacity at 0, or pagesKv empty");
    return;
  }
  if (p.pagesKv.numPages != 0 || p.pagesKv.maxPagesPerSeq != 0)
    errors.add(ErrorKind::Usage,
               "pagesKv.numPages/maxPagesPerSeq are set but pagesKv.pageSize "
               "is 0: set the page size (a power of two) too");
  if (p.capacity < 1 || p.capacity > INT32_MAX)
    errors.add(ErrorKind::Usage,
               "a contiguous cache needs capacity (rows per sequence) from 1 "
               "to 2^31 - 1, got " +
                   Twine(p.capacity) + "; or set pagesKv for a paged cache");
}

// Every sequence's rows after the append must fit its cache.
static void checkLengths(const api::AppendProblem &p, ErrorList &errors) {
  if (int64_t(p.seqlens.size()) != p.batch) {
    errors.add(ErrorKind::Usage,
               "seqlens holds " + Twine(p.seqlens.size()) +
                   " lengths but batch is " + Twine(p.batch) +
                   ": give each sequence's rows before the append");
    return;
  }
  int64_t rows = p.pagesKv.enabled()
                     ? p.pagesKv.maxPagesPerSeq * p.pagesKv.pageSize
                     : p.capacity;
  for (size_t b = 0; b < p.seqlens.size(); ++b)
    if (p.seqlens[b] < 0 || p.seqlens[b] + p.newTokens > rows) {
      errors.add(ErrorKind::Usage,
                 "seqlens[" + Twine(b) + "] = " + Twine(p.seqlens[b]) +
                     " plus newTokens " + Twine(p.newTokens) +
                     " must fit the " + Twine(rows) +
                     " rows a sequence's cache holds (lengths >= 0); " +
                     (p.pagesKv.enabled() ? "raise pagesKv.maxPagesPerSeq"
                                          : "raise capacity"));
      return;
    }
}

static void checkRotary(const api::AppendProblem &p, ErrorList &errors) {
  if (p.rotary == api::Rotary::None) {
    if (p.rotaryDim != 0 || p.rotateQ)
      errors.add(ErrorKind::Usage,
                 "rotaryDim or rotateQ is set but rotary is Rotary::None: "
                 "choose Rotary::Interleaved or Rotary::Half");
    return;
  }
  int64_t dim = p.rotaryDim ? p.rotaryDim : p.headDim;
  if (dim < 2 || dim > p.headDim || dim % 2 != 0)
    errors.add(ErrorKind::Usage, "rotaryDim " + Twine(dim) +
                                     " must be even and from 2 to headDim " +
                                     Twine(p.headDim));
  if (!(p.rotaryBase > 1) || !std::isfinite(p.rotaryBase))
    errors.add(ErrorKind::Usage,
               "rotaryBase must be a finite number > 1 (10000 is RoPE's)");
}

static KernelSpec featuresOf(const api::AppendProblem &p,
                             const std::string &target) {
  KernelSpec s;
  s.family = Family::AppendKv;
  s.dtype = toDType(p.dtype);
  s.d = unsigned(p.headDim);
  s.dv = p.headDimV ? unsigned(p.headDimV) : 0;
  s.target = target;
  return s;
}

static AppendKvProblem appendProblemOf(const api::AppendProblem &p,
                                       const KernelSpec &spec) {
  AppendKvProblem a = AppendKvProblem::forSpec(spec);
  a.batch = p.batch;
  a.headsQ = headsQOf(p);
  a.headsKv = p.headsKv;
  a.newTokens = p.newTokens;
  a.cache = p.pagesKv.enabled()
                ? KvCacheLayout::paged(p.pagesKv.pageSize, p.pagesKv.numPages,
                                       p.pagesKv.maxPagesPerSeq)
                : KvCacheLayout::contiguous(p.capacity);
  a.cacheLens.assign(p.seqlens.begin(), p.seqlens.end());
  a.rotary = toRotaryForm(p.rotary);
  a.rotaryDim = p.rotaryDim;
  a.rotateQ = p.rotateQ;
  return a;
}

llvm::Expected<LoweredAppend> fmhajit::lowerAppend(const api::AppendProblem &p,
                                                   const std::string &target) {
  const ArchInfo *arch = findArch(target);
  assert(arch && "the caller resolves the target");
  ErrorList errors;
  checkTypesAndDims(p.headDim, p.headDimV, p.dtype, *arch, errors);
  checkSizes(p, errors);
  checkCache(p, errors);
  checkRotary(p, errors);
  if (errors.empty())
    checkLengths(p, errors);
  if (!errors.empty())
    return errors.take();
  auto features = validateSpec(featuresOf(p, target));
  if (!features)
    return features.takeError();
  LoweredAppend l;
  l.features = featuresOf(p, target);
  l.features.out = features->outType();
  l.features.dv = features->headDimV();
  l.problem = appendProblemOf(p, l.features);
  if (llvm::Error err = l.problem.validate(l.features))
    return std::move(err);
  l.seqlens = p.seqlens;
  l.rotaryBase = p.rotaryBase;
  l.device = p.device;
  return l;
}

static std::string cacheText(const KvCacheLayout &c) {
  if (!c.isPaged())
    return "contiguous cache of " + std::to_string(c.capacity) +
           " rows per sequence";
  return "paged cache: " + std::to_string(c.numPages) + " pages of " +
         std::to_string(c.pageSize) + " rows, up to " +
         std::to_string(c.maxPagesPerSeq) + " per sequence";
}

static std::string rotaryText(const LoweredAppend &l) {
  const AppendKvProblem &a = l.problem;
  if (a.rotary == RotaryForm::None)
    return "no rotary";
  char base[32];
  snprintf(base, sizeof(base), "%g", l.rotaryBase);
  return "rotary " + rotaryFormName(a.rotary).str() + " (dim " +
         std::to_string(a.resolvedRotaryDim()) + ", base " + base + ") on " +
         (a.rotateQ ? "K and Q" : "K");
}

std::string fmhajit::describeAppend(const LoweredAppend &l) {
  const AppendKvProblem &a = l.problem;
  return "append batch " + std::to_string(a.batch) + ", heads " +
         std::to_string(a.headsQ) + " q / " + std::to_string(a.headsKv) +
         " kv, " + std::to_string(a.newTokens) + " new rows per sequence, d " +
         std::to_string(a.d) + " / dv " + std::to_string(a.dv) + ", " +
         keyOf(l.features.dtype).str() + ", " + cacheText(a.cache) + ", " +
         rotaryText(l);
}
