//===- AttentionSink.h - The sink logit in the online softmax -------------===//
//
// sink=1 (gpt-oss): each query head h has a learnable logit sink_h that
// joins the softmax's denominator but has no value row:
//   O = sum_j e^(s_j) V_j / (e^(sink_h) + sum_j e^(s_j)),
//   LSE = log(e^(sink_h) + sum_j e^(s_j)).
// The recipe treats it as a key seen before the first key tile: the running
// max m starts at the sink (in log2 units) and the running sum l at
// 2^(sink - m) = 1 (fp8: 2^8, the shift P carries), O at 0. The online
// softmax then folds it in like any key, the max includes it so nothing
// overflows, and the epilogue needs no change: a row that sees no key ends
// with O = 0 / l = 0 and LSE = sink_h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"

namespace fmhajit {

/// Starts \p m and \p l of \p item's query tile at the sinks of its rows'
/// heads (KernelArgs::sinks), where \p active (i1; null: always) holds;
/// elsewhere m stays -inf and l 0. A split-KV call passes split == 0, so the
/// sink joins one part's partials only and the combine's log-sum-exp counts it
/// once. Under pack_gqa a tile's rows have different heads: their sinks are
/// gathered through \p scratch (a Scores tile the key loop overwrites), one
/// column per row, and reduced into m with rowMax.
///   %sink = load float, sinks + h;  %m.sink = select %active, %sink * log2e,
///   -inf m = splat %m.sink;  %l.sink = select(m == -inf, 0, 2^fp8 shift)
void startAtSink(llvm::IRBuilderBase &b, ArgsReader &p, TileOps &ops,
                 const WorkItem &item, llvm::Value *active, Tile &scratch,
                 RowVec &m, RowVec &l, double fp8Shift);

} // namespace fmhajit
