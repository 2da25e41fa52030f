//===- WgmmaBackwardLayout.h - The backward on pipeline=wgmma -------------===//
//
// NvptxWgmmaBackwardTileOps (ir/targets) runs bwd_dq_dk_dv on sm_90a's
// warpgroup MMA with FlashAttention-3's data flow: a block owns bn keys of
// one K/V head, each consumer warpgroup 64 of them (wgmma's M), and walks
// the query tiles that see them. S and dP are computed transposed, keys as
// rows (S^T = K Q^T, dP^T = V dO^T), so that P^T and dS^T, converted to
// 16 bits, are already the A fragments of dV += P^T dO and dK += dS^T Q:
// neither goes through shared memory. dQ = dS K reads dS^T from shared
// memory (an MN-major A operand), split among the warpgroups by query rows
// (dqRowGroups, 64 rows each) and then by columns (dqColGroups):
//
//   d = 128: bm = 64,  bn = 128, 8 warps: dQ columns 0-63 | 64-127
//   d = 64:  bm = 128, bn = 128, 8 warps: dQ rows 0-63 | 64-127
//
// dQ goes to the fp32 workspace by atomic adds, as on pipeline mma.
// Shared memory, each tile on a 1024-byte boundary in WgmmaLayout's
// swizzled slabs:
//
//   K [bn][d] | V [bn][dv] | Q [bm][d] x 2 | dO [bm][dv] x 2 | dS^T [bn][bm]
//   | LSE [bm] x 2 | D [bm] x 2 (fp32)
//
// Every thread copies with cp.async (stages=1); no warp specializes. Q, dO,
// the LSE and D have two buffers each: the next query tile's are copied
// into the other while this one's products run (TileOps::prefetch). A
// buffer of LSE or D is bm floats.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

class WgmmaBackwardLayout {
public:
  /// Keys a consumer warpgroup owns: wgmma's M.
  static constexpr unsigned kKeysPerGroup = 64;
  /// Registers a thread may give its accumulators: dK and dV ((d + dv) / 2),
  /// S and dP (bm / 2 each, and softcap=1's tanh derivative) and its part
  /// of dQ.
  static constexpr unsigned kMaxAccumulators = 224;

  explicit WgmmaBackwardLayout(const KernelSpec &spec);

  /// The tiles for head dim \p d, to try in order (none past 128): up to
  /// 32, bm = bn = 64 on one warpgroup; up to 64, bm = bn = 128 on two, or
  /// the first where its registers do not suffice (softcap=1); up to 128,
  /// bm = 64, bn = 128.
  static std::vector<const TileConfig *> defaultTiles(unsigned d);

  /// Consumer warpgroups, and how they split dQ's rows and columns.
  unsigned groups, dqRowGroups, dqColGroups;
  SharedTile keys, values, query, dO, grads, lse, dsum;

  /// Bytes from a tile's first buffer to its second (Q and dO).
  static unsigned bufferBytes(const SharedTile &tile);
  /// Bytes of one swizzled slab row for rows of \p width 16-bit elements.
  static unsigned slabBytes(unsigned width);
  unsigned bytes() const;
  /// family bwd_dq_dk_dv, fp16 or bf16, stages=1, 64 keys a warpgroup, bm
  /// in whole 64-row dQ groups, the accumulators' registers, no dropout
  /// and no deterministic=1 (pipeline mma has them).
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
};

} // namespace fmhajit
