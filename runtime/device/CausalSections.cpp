//===- CausalSections.cpp - How many heads a causal section holds --------===//
//
// Measured on the H100 against the L2 rule alone (docs/results.md, session
// 19): +6-20% at S = 512, where the L2 rule's 128 heads a section overflowed
// L2 (Nsight Compute counted 1.34x cuDNN's DRAM bytes), +4-7% at 1024, 0-3%
// longer. One head a section at d = 64, S = 16384 (86 query tiles on 132
// blocks) left 46 blocks idle each round: 30% slower, hence the sixteenth.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/CausalSections.h"
#include <algorithm>
#include <limits>

using namespace fmhajit;

int32_t fmhajit::causalSectionHeads(const KernelSpec &spec, const KernelArgs &p,
                                    int64_t blocks, int64_t sectionBytes) {
  int64_t headBytes = std::max<int64_t>(p.seqlenK, 1) *
                      (spec.d + spec.headDimV()) * dtypeBytes(spec.dtype);
  int64_t budget = sectionBytes > 0 ? sectionBytes : kSectionBytes;
  int64_t heads = std::max<int64_t>(budget / headBytes, 1);
  int64_t tiles = std::max<int32_t>(p.numQTiles, 1);
  int64_t oneRound = blocks / tiles;
  bool fillsRound = oneRound >= 1 && blocks - oneRound * tiles <= blocks / 16;
  if (sectionBytes <= 0 && fillsRound && oneRound < heads)
    heads = oneRound;
  return int32_t(std::min<int64_t>(heads, std::numeric_limits<int32_t>::max()));
}
