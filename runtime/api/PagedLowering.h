//===- PagedLowering.h - A Problem's paged K/V cache, checked -------------===//
//
// The paged half of lowerProblem (ProblemLowering.h): a Problem whose
// pagesKv is enabled becomes a fwd_paged problem whose K and V are page
// pools [numPages, pageSize, headsKv, dim] and whose sequences have their
// own key counts (seqlensK). The checks speak the Problem's field names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include "runtime/numerics/KvCache.h"
#include "specs/Errors.h"
#include <cstdint>

namespace fmhajit {

/// Adds one Usage error per inconsistency of \p p's paged fields (or of
/// paged fields set on an unpaged problem) to \p errors.
void checkPagedKv(const api::Problem &p, ErrorList &errors);

/// Adds an error per bad field of enabled \p pages: a page size that is not
/// a power of two, no pages, pools past the kernels' 32-bit row index.
void checkPages(const api::PagedKv &pages, ErrorList &errors);

/// The longest of \p p's seqlensK (checked, paged).
int64_t longestSeqlenK(const api::Problem &p);

/// The cache layout of \p p's checked pagesKv.
KvCacheLayout pagedLayoutOf(const api::Problem &p);

} // namespace fmhajit
