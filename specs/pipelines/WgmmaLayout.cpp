//===- WgmmaLayout.cpp - pipeline=wgmma layout and rules ------------------===//
#include "specs/pipelines/WgmmaLayout.h"
#include "specs/Keys.h"
#include "llvm/ADT/bit.h"
#include <algorithm>

using namespace fmhajit;
using llvm::Twine;

/// The forward attention loop, whose K/V tiles the ring holds.
static bool hasKeyLoop(Family f) {
  return f == Family::Fwd || f == Family::FwdSplitKv || f == Family::FwdPaged;
}

bool fmhajit::usesTensorMaps(const KernelSpec &spec) {
  return spec.pipeline == Pipeline::Wgmma && spec.stages >= 2 &&
         hasKeyLoop(spec.family);
}

bool fmhajit::keysAsRows(const KernelSpec &spec) {
  return spec.pipeline == Pipeline::Wgmma && hasKeyLoop(spec.family) &&
         spec.bm > 0 &&
         spec.bm < WgmmaLayout::kWarpsPerGroup * WgmmaLayout::kRowsPerWarp;
}

bool fmhajit::defaultTileServes(const KernelSpec &spec) {
  // fp8 has only the ring: its paged kernels are the ring's or none.
  bool pagedWithATwin = loadsPagedBoxes(spec) && !isFp8(spec.dtype);
  return !(usesTensorMaps(spec) && (spec.pack_gqa || pagedWithATwin));
}

std::string fmhajit::pagesTooSmall(const KernelSpec &spec,
                                   unsigned log2PageSize) {
  std::string out =
      "loads TMA boxes of at least " + std::to_string(kMinPagedBoxRows) +
      " rows of a page, but the pages have " +
      std::to_string(1u << log2PageSize) + ": use pages of at least " +
      std::to_string(kMinPagedBoxRows) + " rows";
  if (!isFp8(spec.dtype))
    out += ", or stages=1";
  return out;
}

bool fmhajit::loadsPagedBoxes(const KernelSpec &spec) {
  return usesTensorMaps(spec) && spec.family == Family::FwdPaged;
}

unsigned fmhajit::pagedBoxRows(unsigned log2PageSize, unsigned bn) {
  unsigned tileBits = unsigned(llvm::countr_zero(bn));
  return 1u << std::min(log2PageSize, tileBits);
}

bool fmhajit::readsPagesOf(const KernelSpec &spec, unsigned log2PageSize) {
  return !loadsPagedBoxes(spec) ||
         pagedBoxRows(log2PageSize, spec.bn) >= kMinPagedBoxRows;
}

static unsigned alignedTile(unsigned offset) {
  unsigned a = WgmmaLayout::kTileAlignment;
  return (offset + a - 1) / a * a;
}

// Rows are whole slab rows (no padding: the swizzle spreads accesses over
// the banks); each tile starts on a 1024-byte boundary.
WgmmaLayout::WgmmaLayout(const KernelSpec &spec, const ArchInfo &arch)
    : spec(spec), arch(arch) {
  unsigned size = dtypeBytes(spec.dtype);
  query = {0, spec.bm, spec.d, size};
  unsigned afterQuery = query.end();
  if (keysAsRows(spec)) {
    probabilities = {alignedTile(afterQuery), spec.bm, spec.bn, size};
    exchange = {probabilities.offset +
                    kProbabilityBuffers * probabilities.bytes(),
                kExchangeBuffers * spec.bm, kWarpsPerGroup, 4};
    afterQuery = exchange.end();
  }
  keys = {alignedTile(afterQuery), spec.bn, spec.d, size};
  if (!valuesKMajor()) {
    values = {alignedTile(keys.end()), spec.bn, spec.headDimV(), size};
    return;
  }
  values = {alignedTile(keys.end()), spec.headDimV(), spec.bn, size};
  if (transposesValues())
    stagedValues = {alignedTile(values.end()), spec.bn, spec.headDimV(), size};
}

bool WgmmaLayout::valuesKMajor() const { return isFp8(spec.dtype); }

bool WgmmaLayout::copiesQueryRows() const {
  return usesTensorMaps(spec) && spec.pack_gqa;
}

bool WgmmaLayout::transposesValues() const {
  return valuesKMajor() && !spec.v_pretranspose;
}

unsigned WgmmaLayout::stepElements() const {
  return 32 / dtypeBytes(spec.dtype);
}

unsigned WgmmaLayout::slabBytes(unsigned width) const {
  unsigned rowBytes = width * dtypeBytes(spec.dtype);
  for (unsigned bytes : {128u, 64u})
    if (rowBytes % bytes == 0)
      return bytes;
  return 32;
}

unsigned WgmmaLayout::stageBytes() const {
  const SharedTile &last = transposesValues() ? stagedValues : values;
  return alignedTile(last.end()) - keys.offset;
}

unsigned WgmmaLayout::barrierOffset() const {
  return keys.offset + spec.stages * stageBytes();
}

unsigned WgmmaLayout::barrierCount() const {
  // The tail barrier: the producer's wait for a partial paged V tile (the
  // transposers zero fp8's staged rows themselves).
  bool tail = loadsPagedBoxes(spec) && !transposesValues();
  return 2 + (transposesValues() ? 6 : 4) * spec.stages + (tail ? 1 : 0);
}

bool fmhajit::walksWorkItems(const KernelSpec &spec) {
  // The masks whose persistent grid was measured faster on the H100 (a
  // window was not timed, and its fp8 d = 64 kernel spilled walking).
  bool measured = spec.mask == Mask::None || sortsWorkItemsByCost(spec);
  // Three consumer warpgroups have 160 registers each; with soft-capping
  // and a mask they have none to spare for the walk (ptxas spills).
  bool tight = spec.warps > 8 && spec.softcap && spec.mask != Mask::None;
  // Packed GQA rows cost two consumer warpgroups a few registers more (each
  // row's token and head): past d = 128 or bn = 128 (d = 256 at bn = 80,
  // d = 128 at bn = 160) they spilled 8 to 44 bytes walking, at 232
  // registers, and none at the 240 they keep without the walk.
  bool packedTight = spec.pack_gqa && spec.warps > 4 &&
                     (spec.headDimV() > 128 || spec.bn > 128);
  return usesTensorMaps(spec) && spec.family == Family::Fwd && measured &&
         !tight && !packedTight && !keysAsRows(spec);
}

bool fmhajit::splitsTail(const KernelSpec &spec) {
  // The fold of the parts needs a few registers beside O's in the last
  // part's epilogue: at dv = 128 and up to 192 keys a tile every feature
  // assembles without spills; d = 256 (O is 128 registers a thread), d = 64
  // with ALiBi or fp8, and fp8's 224-key tile spilled 4-40 bytes (ptxas,
  // tests/lit/nvptx/no-spills.test), as did fp8 on three consumer
  // warpgroups (160 registers) beside V's transposers (8 bytes).
  bool transposers = isFp8(spec.dtype) && !spec.v_pretranspose;
  bool fits = spec.headDimV() == 128 && spec.bn <= 192 &&
              !(transposers && spec.warps > 8);
  return walksWorkItems(spec) && spec.mask == Mask::None && !spec.varlen &&
         !spec.pack_gqa && spec.variant.empty() && fits;
}

bool fmhajit::sortsWorkItemsByCost(const KernelSpec &spec) {
  return spec.mask == Mask::Causal || spec.mask == Mask::CausalBr;
}

unsigned WgmmaLayout::bytes() const {
  if (!usesTensorMaps(spec))
    return keys.offset + spec.stages * (values.end() - keys.offset);
  return barrierOffset() + 8 * barrierCount();
}

void WgmmaLayout::check(ErrorList &errors) const {
  if (spec.stages < 1 || spec.stages > kMaxStages)
    addTileError(errors, "stages", spec.stages,
                 "pipeline wgmma copies with cp.async (stages=1) or loads by "
                 "TMA into a ring of 2 to " +
                     Twine(kMaxStages) + " slots (stages=2.." +
                     Twine(kMaxStages) + ")");
  if (spec.warps % kWarpsPerGroup)
    addTileError(errors, "warps", spec.warps,
                 "pipeline wgmma computes in whole warpgroups of 4 warps: use "
                 "a multiple of 4 up to " +
                     Twine(arch.maxWarps) + " on " + arch.name);
  else if (keysAsRows(spec))
    checkKeysAsRows(errors);
  else if (spec.bm != kRowsPerWarp * spec.warps)
    addTileError(errors, "bm", spec.bm,
                 "pipeline wgmma gives each warp 16 query rows: use bm=" +
                     Twine(kRowsPerWarp * spec.warps) +
                     " for warps=" + Twine(spec.warps) +
                     ", or warps=" + Twine(spec.bm / kRowsPerWarp) +
                     ", or bm under 64 (a multiple of 8) for keys as rows");
  if (spec.bn % stepElements() || spec.bn > kMaxN)
    addTileError(errors, "bn", spec.bn,
                 "pipeline wgmma multiplies " + Twine(stepElements()) +
                     " keys at a time, at most 256 per instruction: use a "
                     "multiple of " +
                     Twine(stepElements()) + " up to 256");
  if (spec.headDimV() > kMaxN)
    addTileError(errors, "dv", spec.headDimV(),
                 "pipeline wgmma computes O with one instruction of at most "
                 "256 columns: use dv up to 256");
  checkHeadDimMultiple(spec, 32 / dtypeBytes(spec.dtype),
                       "pipeline wgmma reads Q, K and V in swizzled slabs of "
                       "at least 32 bytes",
                       errors);
  if (spec.stages >= 2 && !hasKeyLoop(spec.family))
    addTileError(errors, "stages", spec.stages,
                 "pipeline wgmma's ring (stages>=2) holds the forward "
                 "attention loop's K/V tiles; family=" +
                     keyOf(spec.family) + " has none: use stages=1");
  // dropout=1's Philox (ir/Dropout.h) needs registers beside S and O: with
  // 128 keys a tile spilled on sm_90a (d = 64 on 3 warpgroups 224 bytes,
  // d = 128 under a window 144, d = 256 causal 104); with 64 none did.
  if (spec.dropout && spec.bn > kMaxDropoutN)
    addTileError(errors, "bn", spec.bn,
                 "pipeline wgmma with dropout=1 keeps its Philox draws in "
                 "registers beside S and O: use bn up to " +
                     Twine(kMaxDropoutN));
  if (usesTensorMaps(spec))
    checkTensorMapLoads(errors);
  if (valuesKMajor())
    checkFp8(errors);
  else if (spec.v_pretranspose)
    errors.add(ErrorKind::Spec,
               "v_pretranspose=1: only fp8 kernels read V^T (16-bit wgmma "
               "reads V as it is stored); dtype=" +
                   keyOf(spec.dtype).str() + " does not take it");
  // The pass writes V^T per (sequence, head) at seqlenK's stride.
  if (spec.v_pretranspose && spec.varlen)
    addTileError(errors, "v_pretranspose", 1,
                 "V^T's pass lays out sequences of one length, not varlen's "
                 "packed rows: use v_pretranspose=0");
}

// V^T comes from the transposers (ir/targets/NvptxFp8Transpose.cpp, in the
// producer warpgroup) or from v_pretranspose's pass
// (NvptxValuePretranspose.cpp, loaded by TMA): either needs the TMA ring,
// and both move V in runs of 32 columns (bn is a multiple of 32 already).
void WgmmaLayout::checkFp8(ErrorList &errors) const {
  if (spec.stages < 2)
    addTileError(errors, "stages", spec.stages,
                 "fp8 on pipeline wgmma reads V^T, which only the TMA ring "
                 "transposes or loads: use stages=2");
  if (spec.headDimV() % 32)
    addTileError(errors, "dv", spec.headDimV(),
                 "fp8 on pipeline wgmma transposes V 32 columns at a time: use "
                 "a multiple of 32");
}

// Keys as rows (keysAsRows): one warpgroup computes S^T = K Q^T with its
// 64-row products over the key tile and O^T = V^T P^T over dv, the bm query
// rows as N. Its P goes through shared memory (wgmma's B operand), and V is
// read MN-major as A, which only 16-bit types can be; the ring feeds it.
void WgmmaLayout::checkKeysAsRows(ErrorList &errors) const {
  unsigned rows = kWarpsPerGroup * kRowsPerWarp;
  if (spec.bm % kAtomRows)
    addTileError(errors, "bm", spec.bm,
                 "pipeline wgmma with keys as rows (bm under 64) takes the "
                 "query rows as the products' N, in swizzle atoms of 8: use "
                 "a multiple of 8");
  if (spec.warps != kWarpsPerGroup)
    addTileError(errors, "warps", spec.warps,
                 "pipeline wgmma with keys as rows (bm under 64) computes in "
                 "one warpgroup: use warps=4");
  if (spec.bn % rows)
    addTileError(errors, "bn", spec.bn,
                 "pipeline wgmma with keys as rows (bm under 64) multiplies "
                 "64 keys a product: use a multiple of 64");
  if (spec.headDimV() % rows)
    addTileError(errors, "dv", spec.headDimV(),
                 "pipeline wgmma with keys as rows (bm under 64) computes O^T "
                 "64 columns a product: use dv=64, 128, 192 or 256");
  if (spec.stages < 2)
    addTileError(errors, "stages", spec.stages,
                 "pipeline wgmma with keys as rows (bm under 64) reads K and "
                 "V from the TMA ring: use stages=2 or more");
  if (isFp8(spec.dtype))
    addTileError(errors, "bm", spec.bm,
                 "pipeline wgmma with keys as rows (bm under 64) reads V as "
                 "the transposed A operand, which only 16-bit types have: "
                 "dtype=" +
                     keyOf(spec.dtype).str() + " takes bm=64 or more");
  if (spec.dropout)
    addTileError(errors, "bm", spec.bm,
                 "pipeline wgmma with keys as rows (bm under 64) has no "
                 "dropout: use bm=64 or more");
}

// A tensor map describes a [batch, rows, heads, d] box grid of fixed
// extents. Varlen's packed rows fit one: one sequence of all of them, a box
// starting at a sequence's first packed row (runtime/device/TensorMapBoxes.h).
// So do a paged cache's pools, viewed as [pages, page rows, heads, d]: a box
// of gcd(page size, bn) rows never leaves its page, and the producer looks
// each box's page up in the block table (loadsPagedBoxes). pack_gqa's
// (token, head) rows fit none, but they are only Q's, which the consumers
// then copy themselves (copiesQueryRows): K and V stay boxes of one K/V head.
void WgmmaLayout::checkTensorMapLoads(ErrorList &errors) const {
  if (spec.bm > kMaxBoxRows)
    addTileError(errors, "bm", spec.bm,
                 "TMA boxes (stages>=2) have at most 256 rows");
}
