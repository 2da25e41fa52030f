//===- PagedLowering.cpp - A Problem's paged K/V cache, checked -----------===//
#include "runtime/api/PagedLowering.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include <limits>

using namespace fmhajit;
using llvm::Twine;

/// KvCache.cpp's bounds: pages up to 2^20 rows, pools within the kernel's
/// 32-bit row index.
static constexpr int64_t kMaxPageSize = int64_t(1) << 20;
static constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max();

static void checkUnpaged(const api::Problem &p, ErrorList &errors) {
  if (!p.seqlensK.empty())
    errors.add(ErrorKind::Usage,
               "seqlensK is given but pagesKv.pageSize is 0: set pagesKv to "
               "read K/V from a paged cache, or give seqlenK (cuSeqlensK "
               "under varlen) instead");
  if (p.pagesKv.numPages != 0 || p.pagesKv.maxPagesPerSeq != 0)
    errors.add(ErrorKind::Usage,
               "pagesKv.numPages/maxPagesPerSeq are set but pagesKv.pageSize "
               "is 0: set the page size (a power of two) too");
}

void fmhajit::checkPages(const api::PagedKv &pages, ErrorList &errors) {
  if (pages.pageSize < 1 || pages.pageSize > kMaxPageSize ||
      !llvm::isPowerOf2_64(uint64_t(pages.pageSize)))
    errors.add(ErrorKind::Usage, "pagesKv.pageSize " + Twine(pages.pageSize) +
                                     " must be a power of two from 1 to " +
                                     Twine(kMaxPageSize) +
                                     " (16, 64 and 256 are usual)");
  if (pages.numPages < 1 || pages.maxPagesPerSeq < 1)
    errors.add(ErrorKind::Usage, "pagesKv.numPages (" + Twine(pages.numPages) +
                                     ") and pagesKv.maxPagesPerSeq (" +
                                     Twine(pages.maxPagesPerSeq) +
                                     ") must both be >= 1");
  else if (pages.pageSize >= 1 && pages.numPages > kMaxRows / pages.pageSize)
    errors.add(ErrorKind::Usage,
               "pagesKv.numPages " + Twine(pages.numPages) + " pages of " +
                   Twine(pages.pageSize) +
                   " rows exceed the kernels' 32-bit row index: use fewer");
}

// Each sequence's keys must fit the pages its block table row can name.
static void checkLengths(const api::Problem &p, ErrorList &errors) {
  if (int64_t(p.seqlensK.size()) != p.batch) {
    errors.add(ErrorKind::Usage, "seqlensK holds " + Twine(p.seqlensK.size()) +
                                     " lengths but batch is " + Twine(p.batch) +
                                     ": give each sequence's key count");
    return;
  }
  int64_t rows = p.pagesKv.maxPagesPerSeq * p.pagesKv.pageSize;
  for (size_t b = 0; b < p.seqlensK.size(); ++b) {
    int64_t len = p.seqlensK[b];
    if (len < 1) {
      errors.add(ErrorKind::Usage,
                 "seqlensK[" + Twine(b) + "] = " + Twine(len) +
                     ": every sequence needs at least one key");
      return;
    }
    if (len > rows) {
      errors.add(
          ErrorKind::Usage,
          "seqlensK[" + Twine(b) + "] = " + Twine(len) + " needs " +
              Twine((len + p.pagesKv.pageSize - 1) / p.pagesKv.pageSize) +
              " pages of " + Twine(p.pagesKv.pageSize) +
              " rows but pagesKv.maxPagesPerSeq is " +
              Twine(p.pagesKv.maxPagesPerSeq) + ": raise maxPagesPerSeq");
      return;
    }
  }
}

// What a paged problem cannot combine with.
static void checkCompanions(const api::Problem &p, ErrorList &errors) {
  if (!p.cuSeqlensQ.empty() || !p.cuSeqlensK.empty())
    errors.add(ErrorKind::Usage,
               "paged K/V takes each sequence's keys from seqlensK and "
               "seqlenQ queries per sequence: leave cuSeqlensQ/K empty");
  if (p.k.layout != api::Layout::BSHD || p.v.layout != api::Layout::BSHD)
    errors.add(ErrorKind::Usage,
               "under paged K/V, k and v are packed page pools [numPages, "
               "pageSize, headsKv, dim]: leave Problem::k and v at "
               "TensorLayout::bshd()");
  if (p.seqlenK != 0 && !p.seqlensK.empty() && p.seqlenK != longestSeqlenK(p))
    errors.add(ErrorKind::Usage,
               "seqlenK " + Twine(p.seqlenK) +
                   " is set but a paged problem's keys are seqlensK: leave "
                   "seqlenK at 0");
}

void fmhajit::checkPagedKv(const api::Problem &p, ErrorList &errors) {
  if (!p.pagesKv.enabled()) {
    checkUnpaged(p, errors);
    return;
  }
  // Lengths are checked against pages only once the pages make sense.
  ErrorList paged;
  checkPages(p.pagesKv, paged);
  checkCompanions(p, paged);
  if (paged.empty())
    checkLengths(p, paged);
  if (!paged.empty())
    errors.add(paged.take());
}

int64_t fmhajit::longestSeqlenK(const api::Problem &p) {
  return p.seqlensK.empty() ? 0 : *llvm::max_element(p.seqlensK);
}

KvCacheLayout fmhajit::pagedLayoutOf(const api::Problem &p) {
  return KvCacheLayout::paged(p.pagesKv.pageSize, p.pagesKv.numPages,
                              p.pagesKv.maxPagesPerSeq);
}
