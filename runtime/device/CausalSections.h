//===- CausalSections.h - How many heads a causal schedule's section holds ===//
//
// The persistent causal schedule (ir/PersistentSchedule.h) walks its items
// in sections of heads; the launch chooses how many, since it depends on
// the grid and the problem, not the kernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "specs/KernelSpec.h"
#include <cstdint>

namespace fmhajit {

/// The L2 budget of a section's K and V: about two thirds of an H100's 50 MB.
inline constexpr int64_t kSectionBytes = 32ll << 20;

/// The heads (batch x head pairs) one section holds on a grid of \p blocks,
/// for KernelArgs::sectionHeads. Where the query tiles of whole heads fill
/// one round of the grid but for a sixteenth of it, a section is that round:
/// every query tile of a head runs at about the same time, so its K and V
/// come from DRAM about once. Otherwise as many heads as keep their K and V
/// within kSectionBytes of L2, over several rounds whose snake balances the
/// blocks. \p sectionBytes > 0 replaces that budget and drops the one-round
/// sections (FMHAJIT_SECTION_BYTES, a tuning knob).
int32_t causalSectionHeads(const KernelSpec &spec, const KernelArgs &p,
                           int64_t blocks, int64_t sectionBytes = 0);

} // namespace fmhajit
