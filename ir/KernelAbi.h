//===- KernelAbi.h - The arguments every forward kernel takes -------------===//
//
// Every kernel (forward, split-KV, paged, combine, append_kv) takes one
// FwdParams by pointer (host) or by value (GPU kernel parameter / kernarg
// segment); each family reads the fields it needs (docs/families.md). This plain struct is the single
// definition of that layout: ir/ builds the matching llvm::StructType from
// the field list below and a test checks that both agree on every offset.
//
// Tensors are addressed with element strides, so any layout (BSHD, BHSD,
// packed varlen) works. Under varlen, sequence b's rows are rows
// cu_seqlens[b] .. cu_seqlens[b+1]-1 of a packed [total, heads, d] tensor and
// the batch strides are unused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include <cstdint>

namespace fmhajit {

struct TensorStrides {
  int64_t batch; ///< elements between batches (unused under varlen)
  int64_t row;   ///< elements between sequence positions
  int64_t head;  ///< elements between heads
};

struct FwdParams {
  const void *q;  ///< [batch, seqlenQ, headsQ, d]
  const void *k;  ///< [batch, seqlenK, headsKv, d]
  const void *v;  ///< [batch, seqlenK, headsKv, dv]
  void *o;        ///< [batch, seqlenQ, headsQ, dv] in the spec's out dtype
  float *lse;     ///< [batch, headsQ, seqlenQ], or [headsQ, totalQ] under varlen
  const int32_t *cuSeqlensQ; ///< [batch + 1] under varlen, else null
  const int32_t *cuSeqlensK; ///< [batch + 1] under varlen, else null
  const float *alibiSlopes;  ///< [headsQ] when bias=alibi, else null
  TensorStrides qStrides, kStrides, vStrides, oStrides;
  int32_t batch;
  int32_t headsQ, headsKv;
  int32_t seqlenQ, seqlenK; ///< under varlen: the longest sequence
  int32_t numQTiles;        ///< ceil(seqlenQ / bm)
  float scale;              ///< softmax scale, usually 1/sqrt(d)
  float softcap;            ///< c in c*tanh(s/c); read only when softcap=1
  int32_t windowLeft, windowRight; ///< mask=window; -1 is unbounded

  // The multi-stage families (docs/families.md); null or 0 where unused.
  /// Split-KV partial outputs, fp32, each already divided by its own sum:
  /// [numSplits, batch, headsQ, seqlenQ, dv], or [numSplits, headsQ, totalQ,
  /// dv] under varlen. Written when numSplits > 1; read by splitkv_combine.
  float *oAccum;
  /// Split-KV partial LSEs (natural log, -inf for a part that saw no key):
  /// [numSplits, batch, headsQ, seqlenQ], or [numSplits, headsQ, totalQ].
  float *lseAccum;
  /// Paged K/V: [batch, maxPagesPerSeq] page indices; k/v are then the page
  /// pools [numPages, pageSize, headsKv, d] and kStrides.batch/vStrides.batch
  /// the elements between pages. append_kv: null for a contiguous cache.
  const int32_t *blockTable;
  /// fwd_paged: the keys of each sequence [batch]; append_kv: the rows each
  /// sequence's cache held before the append (where the new rows go).
  const int32_t *cacheSeqlens;
  const void *kNew; ///< append_kv: [batch, seqlenQ, headsKv, d] rows to append
  const void *vNew; ///< append_kv: [batch, seqlenQ, headsKv, dv]
  const float *rotaryCos; ///< append_kv: [positions, rotaryDim / 2]
  const float *rotarySin; ///< append_kv: [positions, rotaryDim / 2]
  TensorStrides kNewStrides, vNewStrides;
  int32_t numSplits;      ///< parts of each work item's key range; 0 or 1: one
  int32_t maxPagesPerSeq; ///< blockTable's row length
  int32_t log2PageSize;   ///< rows per page = 1 << log2PageSize
  int32_t rotaryDim;      ///< append_kv: leading elements rotated; 0: none
  int32_t rotaryInterleaved; ///< 1: pairs (2i, 2i+1); 0: (i, i + rotaryDim/2)
};

/// FwdParams' fields in order, as ir/ lays them out. A field of kind Strides
/// is three int64s.
enum class AbiField { Ptr, Strides, I32, F32 };
inline constexpr AbiField kFwdParamsFields[] = {
    AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,
    AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,
    AbiField::Strides, AbiField::Strides, AbiField::Strides, AbiField::Strides,
    AbiField::I32,     AbiField::I32,     AbiField::I32,     AbiField::I32,
    AbiField::I32,     AbiField::I32,     AbiField::F32,     AbiField::F32,
    AbiField::I32,     AbiField::I32,
    // oAccum .. rotarySin, kNewStrides, vNewStrides, numSplits .. rotaryInterleaved
    AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,
    AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,     AbiField::Ptr,
    AbiField::Strides, AbiField::Strides, AbiField::I32,     AbiField::I32,
    AbiField::I32,     AbiField::I32,     AbiField::I32};

/// Field indices into the IR struct, in FwdParams order.
enum FwdParamsIndex : unsigned {
  kQ, kK, kV, kO, kLse, kCuSeqlensQ, kCuSeqlensK, kAlibiSlopes,
  kQStrides, kKStrides, kVStrides, kOStrides,
  kBatch, kHeadsQ, kHeadsKv, kSeqlenQ, kSeqlenK, kNumQTiles,
  kScale, kSoftcap, kWindowLeft, kWindowRight,
  kOAccum, kLseAccum, kBlockTable, kCacheSeqlens, kKNew, kVNew, kRotaryCos,
  kRotarySin, kKNewStrides, kVNewStrides, kNumSplits, kMaxPagesPerSeq,
  kLog2PageSize, kRotaryDim, kRotaryInterleaved,
};

/// Whether \p f's work items carry a split index: the forward families that
/// cut key ranges. splitkv_combine reads numSplits as the count of partials
/// to merge, one item per query tile.
inline bool hasSplitWorkItems(Family f) {
  return f == Family::FwdSplitKv || f == Family::FwdPaged;
}

/// The host entry point: runs work items [begin, end), where item
/// w = ((b * headsQ) + h) * numQTiles + qTile, times max(numSplits, 1) plus
/// the split when hasSplitWorkItems(family).
using HostKernelFn = void (*)(const FwdParams *params, int64_t begin,
                              int64_t end);

} // namespace fmhajit
