//===- BlockMask.cpp - Which (query tile, key tile) blocks a mask hides ---===//
#include "runtime/numerics/BlockMask.h"
#include "runtime/numerics/Reference.h"
#include "llvm/Support/Parallel.h"
#include <algorithm>

using namespace fmhajit;

// Every real element is read for Hidden and Full (each is a claim about all
// of them); the walk stops as soon as the block is known to be Partial.
BlockKind fmhajit::classifyBlock(const KernelSpec &spec,
                                 const AttentionProblem &problem,
                                 const MaskModFn &maskMod, int64_t b, int64_t h,
                                 int64_t q0, int64_t k0, int64_t sq,
                                 int64_t sk) {
  int64_t q1 = std::min(q0 + int64_t(spec.bm), sq);
  int64_t k1 = std::min(k0 + int64_t(spec.bn), sk);
  bool anyVisible = false, allMasked = true;
  for (int64_t i = q0; i < q1; ++i)
    for (int64_t j = k0; j < k1; ++j) {
      bool mod = maskMod(int(b), int(h), int(i), int(j));
      allMasked &= mod;
      anyVisible |= mod && isKeyVisible(spec, problem, i, j, sq, sk);
      if (anyVisible && !allMasked)
        return BlockKind::Partial;
    }
  if (!anyVisible)
    return BlockKind::Hidden;
  return BlockKind::Full;
}

namespace {
/// Which sequence and head one map row stands for, and its lengths.
struct MapRow {
  int64_t b, h, tile, sq, sk;
};
} // namespace

// One query tile's row: the count, then the listed tiles.
static void fillRow(const KernelSpec &spec, const AttentionProblem &problem,
                    const MaskModFn &maskMod, const MapRow &row, int32_t *out,
                    int64_t counts[3]) {
  int32_t n = 0;
  int64_t q0 = row.tile * spec.bm;
  for (int64_t kt = 0; q0 < row.sq && kt * spec.bn < row.sk; ++kt) {
    BlockKind kind = classifyBlock(spec, problem, maskMod, row.b, row.h, q0,
                                   kt * spec.bn, row.sq, row.sk);
    ++counts[int(kind)];
    if (kind != BlockKind::Hidden)
      out[1 + n++] = int32_t(kt << 1 | (kind == BlockKind::Full));
  }
  out[0] = n;
}

BlockMap fmhajit::buildBlockMap(const KernelSpec &spec,
                                const AttentionProblem &problem,
                                const MaskModFn &maskMod,
                                BlockMapDependence depends) {
  BlockMap map;
  map.queryTiles = (problem.maxSeqlenQ() + spec.bm - 1) / spec.bm;
  map.keyTiles = (problem.maxSeqlenK() + spec.bn - 1) / spec.bn;
  int64_t batches = depends.batch || problem.isVarlen() ? problem.batch : 1;
  int64_t heads = depends.head ? problem.headsQ : 1;
  map.tileStride = 1 + map.keyTiles;
  map.headStride = depends.head ? map.queryTiles * map.tileStride : 0;
  int64_t perBatch = heads * map.queryTiles * map.tileStride;
  map.batchStride = batches > 1 ? perBatch : 0;
  map.entries.assign(batches * perBatch, 0);
  int64_t rows = batches * heads * map.queryTiles;
  std::vector<int64_t> counts(3 * rows, 0);
  llvm::parallelFor(0, rows, [&](size_t r) {
    MapRow row{int64_t(r) / map.queryTiles / heads,
               int64_t(r) / map.queryTiles % heads, int64_t(r) % map.queryTiles,
               0, 0};
    row.sq = problem.seqlenQOf(row.b);
    row.sk = problem.seqlenKOf(row.b);
    fillRow(spec, problem, maskMod, row,
            &map.entries[row.b * perBatch +
                         (row.h * map.queryTiles + row.tile) * map.tileStride],
            &counts[3 * r]);
  });
  for (int64_t r = 0; r < rows; ++r) {
    map.hidden += counts[3 * r];
    map.partial += counts[3 * r + 1];
    map.full += counts[3 * r + 2];
  }
  return map;
}
