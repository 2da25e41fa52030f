//===- AppendKvKernel.h - Appending new K/V rows to a cache ---------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/Module.h"

namespace fmhajit {

/// Emits the append_kv kernel of \p spec into \p m, named after the spec's
/// encoded name. KernelArgs: k/v are the cache it writes (a paged pool when
/// blockTable is set, else [batch, capacity, headsKv, d]), kNew/vNew the
/// rows to append ([batch, seqlenQ, headsKv, d]), q/o optional query rows
/// to rotate (o = rotated q, in the out dtype; skipped when q is null):
///
///   for each work item (b, h < headsQ, tile t of new rows), row i:
///     pos = cacheSeqlens[b] + i
///     if h < headsKv:
///       K(b, pos, h) = rotate(kNew(b, i, h), pos); V(b, pos, h) = vNew(b, i,
///       h)
///     if q: o(b, i, h) = rotate(q(b, i, h), pos)
///   cache row (b, pos, h) = pool + page * strides.batch + off * strides.row
///     + h * strides.head, with page = blockTable[b][pos >> log2PageSize],
///     off = pos & (pageSize - 1) when paged, else page = b, off = pos
///   rotate(x, pos), for pairs k < rotaryDim / 2 (thread-strided):
///     (e0, e1) = rotaryInterleaved ? (2k, 2k + 1) : (k, k + rotaryDim / 2)
///     c = rotaryCos[pos][k], s = rotarySin[pos][k]          (fp32)
///     y[e0] = x[e0] c - x[e1] s; y[e1] = x[e1] c + x[e0] s  (rounded once)
///     elements rotaryDim .. d-1 are copied
void emitAppendKvKernel(const KernelSpec &spec, TargetInfo &target,
                        llvm::Module &m);

} // namespace fmhajit
