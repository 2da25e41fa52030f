//===- WgmmaLayout.h - pipeline=wgmma: sm_90a warpgroup tiles -------------===//
//
// NvptxWgmmaTileOps gives each warp 16 query rows, so each warpgroup of four
// warps owns the 64 rows one wgmma m64nNk16 computes; S and O stay in
// registers as wgmma accumulators. Q [bm][d], K [bn][d] and V [bn][dv] sit
// in shared memory in the layout wgmma reads through matrix descriptors:
// slabs of 64 columns (128 bytes of 16-bit elements), each slab rows x 128
// bytes with the 16-byte chunks of row r XOR-swizzled by r % 8 (the 128-byte
// swizzle, which TMA also writes). Every slab starts on a 1024-byte
// boundary, where the swizzle pattern repeats, so descriptors need no base
// offset. Slabs are why d and dv are multiples of 64, and wgmma's largest N
// (256) bounds bn and dv.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

class WgmmaLayout {
public:
  static constexpr unsigned kWarpsPerGroup = 4;
  /// Query rows a warp owns (a warpgroup's wgmma covers 64).
  static constexpr unsigned kRowsPerWarp = 16;
  /// Bytes of one swizzled slab row, and the slab's width in elements.
  static constexpr unsigned kSlabRowBytes = 128;
  /// The swizzle pattern's period: 8 rows of 128 bytes.
  static constexpr unsigned kSwizzleAtomBytes = 1024;
  /// wgmma's largest N: bounds bn (S = Q K^T) and dv (O += P V).
  static constexpr unsigned kMaxN = 256;
  /// Keys (and columns of d) one wgmma step multiplies.
  static constexpr unsigned kStep = 16;

  WgmmaLayout(const KernelSpec &spec, const ArchInfo &arch);

  SharedTile query, keys, values;

  /// Elements per slab row of the spec's dtype.
  unsigned slabElements() const;
  unsigned bytes() const;
  /// Stages in range; one warp per 16 query rows in whole warpgroups; d and
  /// dv whole slabs; bn and dv within wgmma's N.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
  const ArchInfo &arch;
};

} // namespace fmhajit
