//===- SplitHeuristic.h - How many parts to cut a key range into ----------===//
//
// chooseNumSplits picks by the target's backend, from the problem and the
// machine only (items = batch * heads * ceil(rows / bm), the work items of
// one pass, ir/KernelAbi.h: heads and rows per head follow pack_gqa;
// workers = host threads or GPU multiprocessors):
//
// GPU (measured by bench/decode --device cuda on an H100, docs/results.md):
// decode reads K and V once, so it is bound by memory bandwidth, and more
// blocks in flight keep more loads going until about kGpuBlocksPerSm per
// multiprocessor:
//   n = the power of two >= kGpuBlocksPerSm * workers / items (1 when the
//   items alone reach it), at most kGpuMaxSplits and the key tiles (a part
//   keeps one tile at least; where the key tiles bind, SplitPlanner.h may
//   narrow the tile and count again)
// (the cap was 64 while the combine cost ~0.3 us a part; with its parts
// spread over a block's warps and its launch overlapped, GQA 8:1 at batch 1
// and 128k keys runs 1.29x faster at 128 parts than at 64, and 256 parts
// are no faster at 128k and 1.07x slower at 32k.)
// (FlashAttention-2's wave-filling rule, used before, stopped at ~0.9 blocks
// per SM: 1.1-1.5x slower than the best count at 2k-128k keys, and at batch
// 4 x 32 heads it did not split where 2 parts ran 1.5x faster.)
//
// Host (measured by bench/decode, docs/bench.md): threads claim items one at
// a time, so finer items balance threads that start late or run slower, as
// long as each part keeps enough keys to pay for its partial writes:
//   if seqlenK < kHostMinSplitKeys (kHostMinSplitKeysIdle when items <
//     workers, so that threads sit idle): 1, since the combine's extra
//     dispatch costs more than the parts recover
//   n = the power of two >= kHostItemsPerWorker * workers / items (with
//   several threads) and, for GQA (several query heads per K/V head), >= the
//   parts whose K and V fit kHostCachedPartBytes, any thread count: the
//   group's heads then read each part from cache; at most kMaxSplits and
//   seqlenK / kHostMinKeysPerSplit
// (bench/decode, before the cache term and the part-outermost item order,
// on 16 and 8 threads: the choice was the faster of split and single-pass,
// or within 5%, on 45 of 48 rows. With both, on 2 threads, Hq=8, Hkv=1:
// 8 of 8 rows, and splits reach 1.2-1.35x the single pass from 64k keys.
// Session 28, issue 13's host grid at batch 1 and 8 on the GPU machine's 16
// threads, against the thresholds before (2048 keys idle, parts of 1024):
// 27% less time (geomean) on the 24 rows of 1k and 4k keys, none slower, 1k
// keys at batch 1 0.11-0.29 -> 0.04-0.17 ms; within the runs' spread on the
// 8k-128k rows (geomean -3%); docs/results.md.)
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "specs/KernelSpec.h"

namespace fmhajit {

/// GPU: the blocks per multiprocessor split-KV aims for.
inline constexpr double kGpuBlocksPerSm = 1.5;
/// Most parts the host rule chooses.
inline constexpr unsigned kMaxSplits = 64;
/// Most parts the GPU rule chooses.
inline constexpr unsigned kGpuMaxSplits = 128;
/// Host: no split below this many keys when every thread has an item...
inline constexpr int64_t kHostMinSplitKeys = 4096;
/// ...and below this many when some would sit idle.
inline constexpr int64_t kHostMinSplitKeysIdle = 1024;
/// Host: fewest keys a part may get.
inline constexpr int64_t kHostMinKeysPerSplit = 256;
/// Host: work items to aim for per thread.
inline constexpr int64_t kHostItemsPerWorker = 32;
/// Host: K and V bytes of one part that a core's cache should hold, so that
/// the query heads of a GQA group, which read the part one after another
/// (ir/WorkItem.h puts the part outermost), find it there: about L2.
inline constexpr int64_t kHostCachedPartBytes = int64_t(1) << 20;

/// The split count for \p problem (seqlenK: the longest key sequence) run
/// with \p spec's tiles on \p workers parallel workers (host threads, or the
/// GPU's multiprocessors); 1 means no split. The rule follows the backend
/// of spec.target.
unsigned chooseNumSplits(const KernelSpec &spec,
                         const AttentionProblem &problem, unsigned workers);

/// The GPU rule on the raw counts: \p items work items of one pass over
/// \p keyTiles key tiles each, on \p workers multiprocessors (0: unknown,
/// no split).
unsigned chooseNumSplits(int64_t items, int64_t keyTiles, unsigned workers);

/// The host rule on the raw counts: \p items work items over \p seqlenK keys,
/// \p groupSize query heads per K/V head, \p kvRowBytes bytes of K and V
/// per key (0: leave cache reuse out).
unsigned chooseHostNumSplits(int64_t items, int64_t seqlenK, unsigned workers,
                             int64_t groupSize = 1, int64_t kvRowBytes = 0);

} // namespace fmhajit
