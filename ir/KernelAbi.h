//===- KernelAbi.h - The arguments every forward kernel takes -------------===//
//
// A forward kernel takes one FwdParams by pointer (host) or by value (GPU
// kernel parameter / kernarg segment). This plain struct is the single
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
    AbiField::I32,     AbiField::I32};

/// Field indices into the IR struct, in FwdParams order.
enum FwdParamsIndex : unsigned {
  kQ, kK, kV, kO, kLse, kCuSeqlensQ, kCuSeqlensK, kAlibiSlopes,
  kQStrides, kKStrides, kVStrides, kOStrides,
  kBatch, kHeadsQ, kHeadsKv, kSeqlenQ, kSeqlenK, kNumQTiles,
  kScale, kSoftcap, kWindowLeft, kWindowRight,
};

/// The host entry point: runs work items [begin, end), where item
/// w = ((b * headsQ) + h) * numQTiles + qTile.
using HostKernelFn = void (*)(const FwdParams *params, int64_t begin,
                              int64_t end);

} // namespace fmhajit
