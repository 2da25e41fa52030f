//===- TensorMapBoxes.h - What a TMA kernel's tensor maps describe --------===//
//
// A kernel that loads by TMA (usesTensorMaps: pipeline=wgmma, stages=2)
// takes one tensor map per tensor it loads (ir/KernelAbi.h: TensorMaps).
// Each views its tensor as 4-D, innermost first:
//   [head dim, rows of a sequence, heads, batch]
// with the call's byte strides, and is read in boxes of one swizzled slab
// (128, 64 or 32 bytes of the head dim, as specs/pipelines/WgmmaLayout.h
// lays the tile out) by bm (Q) or bn (K, V) rows. Rows past a sequence's
// end are outside the view, and TMA fills them with zeros. Under varlen the
// view is the packed rows as one sequence of a batch of one
// (KernelArgs::totalQ, totalK): a tile's rows past its sequence's end are
// the next sequence's, which the kernel masks (keys) or does not store
// (queries), and only the last sequence's run off the view.
//
// Under fwd_paged (loadsPagedBoxes) the K and V maps view each pool as
// pages of rows, [head dim, page rows, heads, pages] (KernelArgs::numPages),
// in boxes of pagedBoxRows rows, so that no box leaves its page; the
// kernel looks each box's page up in the block table.
//
// The maps depend on the problem's shapes and strides and on the call's
// pointers: GpuTensorMaps.h encodes them once per plan and replaces the
// pointers at each launch.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <array>

namespace fmhajit {

/// One tensor map to encode.
struct TensorMapRequest {
  const char *tensor = ""; ///< "q", "k" or "v", for errors
  const void *base = nullptr;
  DType dtype = DType::BF16;
  uint64_t dims[4] = {};        ///< innermost first
  uint64_t strideBytes[3] = {}; ///< of dims 1..3
  uint32_t box[4] = {};
  unsigned swizzleBytes = 128; ///< 128, 64 or 32
  /// How much L2 fetches around each line a box reads: 0 (none), 64, 128
  /// or 256 bytes. 256: a box reads one 128-byte slab of each row, and at
  /// d = 128 in 16 bits the row's other slab, its neighbour in memory, is
  /// the next box's; fetched together, decode ran 0-2% faster and the
  /// forward the same (docs/design.md, "Paged rows and the page order").
  unsigned l2PromotionBytes = 256;
};

/// The Q, K and V maps of a usesTensorMaps kernel (TensorMapIndex order),
/// or a Usage error naming the pointer or stride TMA cannot address (TMA
/// needs 16-byte aligned addresses and strides).
llvm::Expected<std::array<TensorMapRequest, kNumTensorMaps>>
tensorMapRequests(const KernelSpec &spec, const KernelArgs &args);

/// What the V map views and its name in errors: V ("v"), or V^T in the
/// workspace under v_pretranspose (ir/targets/NvptxValuePretranspose.h),
/// whose map views it as [keys, dv, headsKv, batch] in boxes of one slab of
/// keys by dv.
struct ValuesMapBase {
  const char *tensor;
  const void *base;
};
ValuesMapBase valuesMapBase(const KernelSpec &spec, const KernelArgs &args);

/// A Usage error unless \p base, the start of \p tensor ("q", "k" or
/// "v"), is an address TMA can take (16-byte aligned).
llvm::Error checkTensorMapBase(const char *tensor, const void *base);

} // namespace fmhajit
