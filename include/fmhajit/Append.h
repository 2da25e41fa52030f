//===- fmhajit/Append.h - Writing new K/V rows into a cache ---------------===//
//
// Each decode step appends the new tokens' K and V to the cache before
// attention reads it. An AppendProblem says where (a paged or contiguous
// cache, each sequence's current length) and whether rotary embedding
// (RoPE) turns K, and optionally Q, on the way; AppendTensors says where
// this call's memory is. plan() an AppendProblem like a Problem, then
// append() the plan as often as you like (Fmhajit.h):
//
//   new rows   kNew [batch, newTokens, headsKv, headDim]   vNew ... headDimV
//   caches     paged: pools [numPages, pageSize, headsKv, dim] + block table
//              contiguous: [batch, capacity, headsKv, dim]
//   Q          [batch, newTokens, headsQ, headDim] (rotateQ), rotated into qOut
//
// Row i of sequence b goes to cache row pos = seqlens[b] + i (the length
// before the append; the caller advances its lengths afterwards). RoPE
// rotates the leading rotaryDim elements of each K (and Q) row by pos:
//   y[e0] = x[e0] cos - x[e1] sin;  y[e1] = x[e1] cos + x[e0] sin
//   interleaved (GPT-J) (e0, e1) = (2k, 2k + 1); half (GPT-NeoX) (k, k +
//   rotaryDim / 2) angle = pos * rotaryBase^(-2k / rotaryDim), unless tables
//   are given.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include <cstdint>
#include <vector>

namespace fmhajit::api {

enum class Rotary {
  None,        ///< K and Q copied as they are
  Interleaved, ///< GPT-J: pairs (2k, 2k + 1)
  Half,        ///< GPT-NeoX: pairs (k, k + rotaryDim / 2)
};

/// One append of newTokens rows per sequence to a K/V cache.
struct AppendProblem {
  int64_t batch = 1;   ///< sequences
  int64_t headsKv = 1; ///< K/V heads of the cache
  int64_t headsQ =
      0; ///< query heads (rotateQ), a multiple of headsKv; 0: headsKv
  int64_t newTokens = 1;     ///< rows appended to each sequence
  int64_t headDim = 128;     ///< K (and Q) head dim
  int64_t headDimV = 0;      ///< V head dim; 0: headDim
  DType dtype = DType::BF16; ///< of the new rows and the caches (rotated Q: fp8
                             ///< gives bf16)
  /// A paged cache when pagesKv.enabled(), else contiguous with capacity
  /// rows per sequence.
  PagedKv pagesKv;
  int64_t capacity = 0;
  /// Rows each sequence's cache holds before the append [batch], >= 0 (host
  /// copy; AppendTensors::seqlens may give the current ones at run time).
  std::vector<int32_t> seqlens;
  Rotary rotary = Rotary::None;
  int64_t rotaryDim = 0;       ///< rotated leading elements, even; 0: headDim
  float rotaryBase = 10000.0f; ///< RoPE's frequency base (the plan's tables)
  bool rotateQ = false;        ///< also rotate Q into AppendTensors::qOut
  Device device = Device::Host;
  void *stream =
      nullptr; ///< GPU: the CUstream / hipStream_t to launch on (null: default)
};

/// The memory of one append (host pointers on Device::Host).
struct AppendTensors {
  const void *kNew = nullptr, *vNew = nullptr; ///< the rows to append
  void *kCache = nullptr,
       *vCache = nullptr; ///< pools, or [batch, capacity, ...]
  const int32_t *blockTable =
      nullptr; ///< paged: [batch, maxPagesPerSeq] (required)
  /// [batch] rows before the append; on the host null takes the problem's
  /// seqlens; on a GPU a device copy (required). The host checks that every
  /// row written lies in the cache; a GPU launch cannot read them first.
  const int32_t *seqlens = nullptr;
  const void *q = nullptr; ///< rotateQ: Q to rotate (required then)
  void *qOut = nullptr;    ///< rotateQ: where rotated Q goes (may be q)
  /// cos/sin tables, fp32 [positions, rotaryDim / 2] covering every row the
  /// cache holds; null takes the plan's, built from rotaryBase.
  const float *rotaryCos = nullptr, *rotarySin = nullptr;
  void *stream = nullptr; ///< GPU: null takes the problem's stream
};

} // namespace fmhajit::api
