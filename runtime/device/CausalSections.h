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

/// The heads (batch x head pairs) one section holds, for
/// KernelArgs::sectionHeads, on a grid of \p blocks walking \p items. The
/// rule: where the query tiles of whole heads fill one round of the grid but
/// for a sixteenth of it, a section is that round (every query tile of a
/// head runs at about the same time, so its K and V come from DRAM about
/// once); otherwise as many heads as keep their K and V within
/// kSectionBytes of L2, over several rounds whose snake balances the
/// blocks. Where the rule's sections would end the slowest block's walk
/// more than 3% after another section size would (causalScheduleSpan; an
/// odd last round of one-round sections), the fewest heads within 3% of
/// the best are taken instead, among whole rounds of heads up to the L2
/// budget; only where the dearest item takes at least 16 key tiles, since
/// shorter ones gain more from L2 than from balance. \p sectionBytes > 0
/// replaces that budget and takes it as is (FMHAJIT_SECTION_BYTES, a tuning
/// knob); \p weighSpans false keeps the rule without weighing it
/// (FMHAJIT_SECTION_SPAN=0, for measurement).
int32_t causalSectionHeads(const KernelSpec &spec, const KernelArgs &p,
                           int64_t items, int64_t blocks,
                           int64_t sectionBytes = 0, bool weighSpans = true);

/// The most any of \p blocks takes walking \p items in sections of
/// \p sectionHeads heads (ir/PersistentSchedule.h's order), in quarter key
/// tiles: each item its key tiles, and a quarter for moving to the next.
int64_t causalScheduleSpan(const KernelSpec &spec, const KernelArgs &p,
                           int64_t items, int64_t blocks, int64_t sectionHeads);

} // namespace fmhajit
