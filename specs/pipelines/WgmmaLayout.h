//===- WgmmaLayout.h - pipeline=wgmma: sm_90a warpgroup tiles -------------===//
//
// NvptxWgmmaTileOps gives each warp 16 query rows, so each warpgroup of four
// warps owns the 64 rows one wgmma m64nNk16 computes; S and O stay in
// registers as wgmma accumulators. Q [bm][d], K [bn][d] and V [bn][dv] sit
// in shared memory in the layout wgmma reads through matrix descriptors:
// slabs of columns, each slab rows x W bytes with W = 128, 64 or 32 (the
// widest that divides a row), its 16-byte chunks XOR-swizzled by the
// address bits above the row (the W-byte swizzle, which TMA also writes).
// A swizzle pattern repeats every 8 rows (an atom of 8 W bytes); every tile
// starts on a 1024-byte boundary and is a whole number of atoms, so
// descriptors need no base offset. The 32-byte swizzle is why d and dv are
// multiples of 16 (of 32 bytes), and wgmma's largest N (256) bounds bn and
// dv.
//
// Two ways to fill the tiles, chosen by stages:
//  - stages=1: every warp copies with cp.async, one K and one V tile, and
//    block barriers publish them.
//  - stages=2 to 4: warp specialization. The block gets a warpgroup more
//    than `warps`, the producer, whose first warp loads Q, K and V by TMA
//    into a ring of `stages` K and V tiles; full and empty mbarriers per ring
//    slot hand tiles to the `warps` consumer warps and back. The barriers
//    follow the last ring slot. A whole warpgroup, because registers move
//    between warpgroups (setmaxnreg): the producer's go to the consumers.
//    Under pack_gqa Q's rows are (token, head) pairs no box describes: the
//    producer loads only K and V, and each consumer warpgroup copies its
//    own 64 rows of Q with cp.async into the same swizzled slabs
//    (copiesQueryRows; ir/targets/NvptxWgmmaTileOps.cpp).
//
// bm under 64 (keysAsRows): one consumer warpgroup multiplies with the keys
// as the rows and the bm query rows as N (S^T = K Q^T, O^T = V^T P^T). Q,
// the ring's K and V are as above; P sits in two [bm][bn] buffers between Q
// and the ring, followed by the exchange where the four warps combine their
// parts of each query's max and sum (ir/targets/NvptxWgmmaKeyRowsTileOps.cpp).
//
// fp8 (e4m3, e5m2): wgmma's 8-bit products take both operands K-major, so
// O += P V needs V^T, [dv][bn] with keys contiguous, and TMA cannot
// transpose. Each ring slot then also holds a staging tile where TMA lands V
// as stored ([bn][dv]); the producer warpgroup's other three warps (the
// transposers) write it into the slot's V tile as V^T, its keys permuted
// within each group of 16 so that P's A fragments come straight from S's
// accumulators (NvptxFp8Transposer.cpp). Two more barriers per slot hand
// the staging tile between the TMA warp and the transposers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"
#include <string>

namespace fmhajit {

/// Whether \p spec's kernel loads by TMA, through tensor maps the launch
/// passes as a second kernel parameter (pipeline=wgmma with stages>=2).
bool usesTensorMaps(const KernelSpec &spec);

/// Whether a default tile (the arch's rows, from which validation fills
/// unset tile keys, and the dispatch table's rows) may be \p spec's tile:
/// all but pack_gqa and 16-bit fwd_paged on the TMA ring. A packed spec takes
/// the ring only where it names stages>=2 itself (a pinned kernel,
/// bench/decode's --tiles): dispatch keeps the tiles it measured (issue 13).
/// A paged one reads pages of at least 8 rows alone (readsPagesOf), so a
/// default tile, which knows no page size, must not be it; the registry
/// offers the plan both (runtime/api/Registry.cpp), and the dispatcher
/// drops the ring for smaller pages. fp8, which has only the ring, keeps it
/// as its default, and its small pages get an error instead.
bool defaultTileServes(const KernelSpec &spec);

/// Whether \p spec's kernel loads a paged cache's K/V by TMA (fwd_paged on
/// the ring): the K and V maps view the pools as [pages, page rows, heads,
/// d], a tile is bn / gcd(page size, bn) boxes per slab, each at the page
/// the block table names, and the sequence's last, partial V tile has its
/// rows past the end zeroed (a page's unused rows may hold anything). Not a
/// default tile until timed against stages=1 (defaultTileServes).
bool loadsPagedBoxes(const KernelSpec &spec);

/// The smallest box a paged K/V map takes: a box of 8 rows fills one whole
/// swizzle atom, so the boxes of a tile land in its layout as one box of bn
/// rows would. Smaller pages run on stages=1.
inline constexpr unsigned kMinPagedBoxRows = 8;

/// The rows of a paged K/V box: gcd(page size, bn), the most rows that
/// divide both, so that a tile starting on a multiple of bn is whole boxes
/// that never cross a page. The kernel computes the same
/// (ir/targets/NvptxPagedBoxes.cpp).
unsigned pagedBoxRows(unsigned log2PageSize, unsigned bn);

/// Whether \p spec's kernel reads a paged cache of 2^log2PageSize-row
/// pages: every kernel but one loading paged boxes of fewer than
/// kMinPagedBoxRows rows.
bool readsPagesOf(const KernelSpec &spec, unsigned log2PageSize);
/// Why \p spec's kernel does not read pages of 2^log2PageSize rows (where
/// !readsPagesOf), and what to use instead.
std::string pagesTooSmall(const KernelSpec &spec, unsigned log2PageSize);

/// Whether \p spec's tile multiplies with keys as the products' rows
/// (pipeline=wgmma, bm < 64): S^T = K Q^T and O^T = V^T P^T, the bm query
/// rows as wgmma's N (8 to 56), so that a decode tile of one GQA group's few
/// rows does not compute 64 (docs/design.md, "Keys as the products' rows").
bool keysAsRows(const KernelSpec &spec);

/// Whether \p spec's kernel is persistent: each block walks work items in
/// rounds (ir/PersistentSchedule.h), so that with fewer blocks than items
/// the producer loads the next item's Q and first keys while the consumers
/// finish the last one (the TMA ring, family=fwd). The launch picks the
/// grid (runtime/device/GpuKernel.cpp; docs/design.md, "Persistent
/// blocks").
bool walksWorkItems(const KernelSpec &spec);

/// Whether \p spec's kernel may cut the key ranges of the items of its last
/// round into parts (KernelArgs::tailParts), the part that finishes an item
/// last folding the others' partials in before it stores O: a walking kernel
/// whose items all cost the same (no mask, equal lengths, no variant, no
/// packed rows), so that the blocks of the last round end together
/// (docs/design.md, "The last round's items split by keys"); dv = 128 only,
/// where the fold fits in the registers.
bool splitsTail(const KernelSpec &spec);

/// Whether \p spec's work items differ in cost (causal masks: a query
/// tile's keys grow with its index). A persistent kernel then walks them
/// sorted by cost (ir/PersistentSchedule.h), and the launch takes the
/// persistent grid at every length.
bool sortsWorkItemsByCost(const KernelSpec &spec);

class WgmmaLayout {
public:
  static constexpr unsigned kWarpsPerGroup = 4;
  /// Query rows a warp owns (a warpgroup's wgmma covers 64).
  static constexpr unsigned kRowsPerWarp = 16;
  /// Rows in one swizzle pattern.
  static constexpr unsigned kAtomRows = 8;
  /// Where every tile starts: the widest swizzle's atom.
  static constexpr unsigned kTileAlignment = 1024;
  /// wgmma's largest N: bounds bn (S = Q K^T) and dv (O += P V).
  static constexpr unsigned kMaxN = 256;
  /// TMA's largest box edge: bounds bm and bn under stages>=2.
  static constexpr unsigned kMaxBoxRows = 256;
  /// The deepest TMA ring: four K and V slots already fill shared memory
  /// at d = 64.
  static constexpr unsigned kMaxStages = 4;
  /// The widest key tile dropout=1 takes (docs/families.md#dropout).
  static constexpr unsigned kMaxDropoutN = 64;

  WgmmaLayout(const KernelSpec &spec, const ArchInfo &arch);

  /// The tiles of ring slot 0; slot s lies s * stageBytes() further on.
  /// Under fp8, values is V^T ([dv][bn], what the products read) and
  /// stagedValues V as TMA lands it ([bn][dv]); otherwise stagedValues is
  /// empty.
  SharedTile query, keys, values, stagedValues;
  /// Under keysAsRows: P, [bm][bn] in swizzled slabs (the K-major B operand
  /// of O^T = V^T P^T), kProbabilityBuffers of them one after the other
  /// (each a whole number of atoms), then the exchange, where the warps of
  /// the warpgroup meet over their row maxima and sums: kExchangeBuffers
  /// buffers of bm rows x kWarpsPerGroup floats. Empty otherwise.
  SharedTile probabilities, exchange;
  /// Two: a key tile's P is written while the last tile's P V still reads
  /// the other.
  static constexpr unsigned kProbabilityBuffers = 2;
  static constexpr unsigned kExchangeBuffers = 2;

  /// Whether the products read V^T ([dv][bn], keys contiguous): fp8, whose
  /// 8-bit wgmma has no transpose bit.
  bool valuesKMajor() const;
  /// Whether V reaches the products through the transposers: fp8 without
  /// v_pretranspose, whose pass writes V^T before the kernel runs.
  bool transposesValues() const;
  /// Whether the consumers copy Q's rows themselves (cp.async) rather than
  /// the producer loading Q by TMA: the ring (stages>=2) under pack_gqa.
  bool copiesQueryRows() const;
  /// Keys one wgmma step multiplies: 32 bytes of each row (16 for 16-bit
  /// types, 32 for fp8).
  unsigned stepElements() const;

  /// Bytes of one slab row (and the swizzle's width) for rows of \p width
  /// elements: 128, 64 or 32, the widest dividing the row.
  unsigned slabBytes(unsigned width) const;
  /// Bytes from one ring slot's K tile to the next's.
  unsigned stageBytes() const;
  /// Where the mbarriers start (stages>=2): eight bytes each, for Q's full
  /// and empty barriers, then K full, K empty, V full and V empty of each
  /// slot, then under fp8 staged-V full and staged-V empty of each slot,
  /// then under loadsPagedBoxes (16-bit) the tail barrier: the producer's
  /// own wait for a partial V tile, whose rows past the end it zeroes.
  unsigned barrierOffset() const;
  unsigned barrierCount() const;
  unsigned bytes() const;
  /// Stages 1 to kMaxStages; one computing warp per 16 query rows in whole
  /// warpgroups; d and dv rows of whole 32-byte chunks; bn and dv within
  /// wgmma's N; TMA's limits and families under stages>=2.
  void check(ErrorList &errors) const;

private:
  void checkTensorMapLoads(ErrorList &errors) const;
  void checkFp8(ErrorList &errors) const;
  void checkKeysAsRows(ErrorList &errors) const;

  const KernelSpec &spec;
  const ArchInfo &arch;
};

} // namespace fmhajit
