//===- KvCache.cpp - The run-time shape of K/V caches and their calls -----===//
#include "runtime/numerics/KvCache.h"
#include "specs/Errors.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cassert>
#include <limits>

using namespace fmhajit;
using llvm::Twine;

/// The largest page: 2^20 rows keeps page * pageSize within the kernel's
/// 32-bit row index for any sane pool.
static constexpr int64_t kMaxPageSize = int64_t(1) << 20;
static constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max();

KvCacheLayout KvCacheLayout::contiguous(int64_t capacity) {
  KvCacheLayout l;
  l.capacity = capacity;
  return l;
}

KvCacheLayout KvCacheLayout::paged(int64_t pageSize, int64_t numPages,
                                   int64_t maxPagesPerSeq) {
  KvCacheLayout l;
  l.pageSize = pageSize;
  l.numPages = numPages;
  l.maxPagesPerSeq = maxPagesPerSeq;
  return l;
}

int64_t KvCacheLayout::rowsPerSequence() const {
  return isPaged() ? maxPagesPerSeq * pageSize : capacity;
}

int64_t KvCacheLayout::log2PageSize() const {
  assert(isPaged() && llvm::isPowerOf2_64(pageSize) && "paged layouts only");
  return llvm::Log2_64(pageSize);
}

llvm::SmallVector<int64_t, 4>
KvCacheLayout::shape(int64_t batch, int64_t headsKv, int64_t dim) const {
  if (isPaged())
    return {numPages, pageSize, headsKv, dim};
  return {batch, capacity, headsKv, dim};
}

int64_t KvCacheLayout::blockStride(int64_t headsKv, int64_t dim) const {
  return (isPaged() ? pageSize : capacity) * headsKv * dim;
}

int64_t KvCacheLayout::cacheRow(llvm::ArrayRef<int32_t> blockTable, int64_t b,
                                int64_t row) const {
  if (!isPaged())
    return b * capacity + row;
  int64_t page = blockTable[b * maxPagesPerSeq + row / pageSize];
  return page * pageSize + row % pageSize;
}

static void checkPagedShape(const KvCacheLayout &l, ErrorList &errs) {
  if (l.pageSize < 1 || l.pageSize > kMaxPageSize ||
      !llvm::isPowerOf2_64(l.pageSize))
    errs.add(ErrorKind::Usage, "page size " + Twine(l.pageSize) +
                                   " must be a power of two from 1 to " +
                                   Twine(kMaxPageSize) +
                                   " (16, 64 and 256 are usual)");
  if (l.numPages < 1 || l.maxPagesPerSeq < 1)
    errs.add(ErrorKind::Usage,
             "a paged cache needs at least one page (num_pages " +
                 Twine(l.numPages) + ", max_pages_per_seq " +
                 Twine(l.maxPagesPerSeq) + ")");
  else if (llvm::SaturatingMultiply(static_cast<uint64_t>(l.numPages),
                                    static_cast<uint64_t>(l.pageSize)) >
           kMaxRows)
    errs.add(ErrorKind::Usage,
             Twine(l.numPages) + " pages of " + Twine(l.pageSize) +
                 " rows exceed the kernel's 32-bit row index; use fewer pages");
}

static void checkBlockTable(const KvCacheLayout &l, int64_t batch,
                            llvm::ArrayRef<int64_t> lengths,
                            llvm::ArrayRef<int32_t> table, ErrorList &errs) {
  if (static_cast<int64_t>(table.size()) != batch * l.maxPagesPerSeq) {
    errs.add(ErrorKind::Usage,
             "the block table has " + Twine(table.size()) +
                 " entries; a paged cache needs batch x max_pages_per_seq = " +
                 Twine(batch * l.maxPagesPerSeq));
    return;
  }
  for (int64_t b = 0; b < batch; ++b)
    if (std::optional<int64_t> slot =
            l.badPageSlot(table.data(), b, 0, lengths[b])) {
      errs.add(ErrorKind::Usage,
               "block table entry [" + Twine(b) + "][" + Twine(*slot) +
                   "] = " + Twine(table[b * l.maxPagesPerSeq + *slot]) +
                   " is not a page index (0 to " + Twine(l.numPages - 1) + ")");
      return;
    }
}

std::optional<int64_t> KvCacheLayout::badPageSlot(const int32_t *blockTable,
                                                  int64_t b, int64_t firstRow,
                                                  int64_t endRow) const {
  const int32_t *pages = blockTable + b * maxPagesPerSeq;
  for (int64_t slot = firstRow / pageSize; slot * pageSize < endRow; ++slot)
    if (pages[slot] < 0 || pages[slot] >= numPages)
      return slot;
  return std::nullopt;
}

llvm::Error fmhajit::validateKvCache(const KvCacheLayout &l, int64_t batch,
                                     llvm::ArrayRef<int64_t> lengths,
                                     llvm::ArrayRef<int32_t> blockTable) {
  ErrorList errs;
  if (static_cast<int64_t>(lengths.size()) != batch)
    return makeError(ErrorKind::Usage,
                     "got " + Twine(lengths.size()) + " cache lengths for " +
                         Twine(batch) + " sequences: give one per sequence");
  if (l.isPaged())
    checkPagedShape(l, errs);
  else if (l.capacity < 1 || l.capacity > kMaxRows)
    errs.add(ErrorKind::Usage,
             "a contiguous cache needs a capacity from 1 to " +
                 Twine(kMaxRows) + " rows; got " + Twine(l.capacity));
  if (!errs.empty())
    return errs.take();
  int64_t longest = lengths.empty() ? 0 : *llvm::max_element(lengths);
  if (longest > l.rowsPerSequence())
    errs.add(
        ErrorKind::Usage,
        "a sequence needs " + Twine(longest) +
            " cache rows but the cache holds " + Twine(l.rowsPerSequence()) +
            " per sequence; " +
            (l.isPaged() ? "raise max_pages_per_seq" : "raise the capacity"));
  else if (l.isPaged() && !blockTable.empty())
    checkBlockTable(l, batch, lengths, blockTable, errs);
  return errs.take();
}

PagedProblem PagedProblem::make(const KernelSpec &spec,
                                AttentionProblem attention, KvCacheLayout cache,
                                std::vector<int64_t> cacheLens) {
  PagedProblem p;
  p.attention = std::move(attention);
  p.attention.d = spec.d;
  p.attention.dv = spec.headDimV();
  if (!cacheLens.empty())
    p.attention.seqlenK = *llvm::max_element(cacheLens);
  p.cache = cache;
  p.cacheLens = std::move(cacheLens);
  return p;
}

llvm::Error PagedProblem::validate(const KernelSpec &spec) const {
  if (llvm::Error err = attention.validate(spec))
    return err;
  ErrorList errs;
  if (!cache.isPaged())
    errs.add(ErrorKind::Usage,
             "fwd_paged reads a paged cache: give a page size (--page-size)");
  if (llvm::any_of(cacheLens, [](int64_t len) { return len < 1; }))
    errs.add(ErrorKind::Usage,
             "every cache length must be >= 1 (a sequence with no key "
             "has nothing to attend to)");
  else if (!cacheLens.empty() &&
           attention.seqlenK != *llvm::max_element(cacheLens))
    errs.add(ErrorKind::Usage,
             "seqlen_k " + Twine(attention.seqlenK) +
                 " must be the longest cache length; build the problem "
                 "with PagedProblem::make");
  if (!errs.empty())
    return errs.take();
  return validateKvCache(cache, attention.batch, cacheLens, {});
}

AppendKvProblem AppendKvProblem::forSpec(const KernelSpec &spec) {
  AppendKvProblem p;
  p.d = spec.d;
  p.dv = spec.headDimV();
  return p;
}

int64_t AppendKvProblem::resolvedRotaryDim() const {
  if (rotary == RotaryForm::None)
    return 0;
  return rotaryDim ? rotaryDim : d;
}

int64_t AppendKvProblem::rotaryPositions() const {
  int64_t longest = cacheLens.empty() ? 0 : *llvm::max_element(cacheLens);
  return longest + newTokens;
}

llvm::SmallVector<int64_t, 4> AppendKvProblem::newShape(int64_t dim) const {
  return {batch, newTokens, headsKv, dim};
}

llvm::SmallVector<int64_t, 4> AppendKvProblem::qShape() const {
  return {batch, newTokens, headsQ, d};
}

static void checkRotary(const AppendKvProblem &p, ErrorList &errs) {
  int64_t dim = p.resolvedRotaryDim();
  if (p.rotary == RotaryForm::None) {
    if (p.rotaryDim != 0 || p.rotateQ)
      errs.add(ErrorKind::Usage,
               "a rotary dim or rotating Q needs a rotary form "
               "(--rotary interleaved|half)");
    return;
  }
  if (dim < 2 || dim > p.d || dim % 2 != 0)
    errs.add(ErrorKind::Usage,
             "rotary dim " + Twine(dim) +
                 " must be even and from 2 to d = " + Twine(p.d));
}

llvm::Error AppendKvProblem::validate(const KernelSpec &spec) const {
  ErrorList errs;
  if (batch < 1 || newTokens < 1)
    errs.add(ErrorKind::Usage, "batch " + Twine(batch) + " and new tokens " +
                                   Twine(newTokens) + " must both be >= 1");
  if (headsQ < 1 || headsKv < 1 || headsQ % headsKv != 0)
    errs.add(ErrorKind::Usage, "heads_q " + Twine(headsQ) +
                                   " must be a multiple of heads_kv " +
                                   Twine(headsKv) + " (both >= 1)");
  if (d != spec.d || dv != spec.headDimV())
    errs.add(
        ErrorKind::Usage,
        "problem head dims d=" + Twine(d) + ", dv=" + Twine(dv) +
            " differ from the spec's; build it with AppendKvProblem::forSpec");
  if (llvm::any_of(cacheLens, [](int64_t len) { return len < 0; }))
    errs.add(ErrorKind::Usage, "cache lengths must be >= 0");
  checkRotary(*this, errs);
  if (!errs.empty())
    return errs.take();
  std::vector<int64_t> after(cacheLens);
  for (int64_t &len : after)
    len += newTokens;
  return validateKvCache(cache, batch, after, {});
}
