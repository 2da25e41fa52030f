//===- ApiRun.cpp - api::run: a loaded plan on the caller's tensors -------===//
//
// The per-call path: a few checks of the caller's Tensors, then each step's
// launch. Nothing here allocates or looks anything up; bench/api measures
// what it costs beyond calling the kernel directly.
//
//===----------------------------------------------------------------------===//
#include "runtime/api/ApiStatus.h"
#include "runtime/api/PlanState.h"
#include <cmath>
#include <cstdint>

using namespace fmhajit;
using namespace fmhajit::api;

static Status invalid(const char *message) {
  return Status(StatusCode::InvalidArgument, message);
}

// The variant's tensors: as many as it reads, each with memory to read.
static Status checkVariantTensors(const detail::PlanState &s,
                                  const Tensors &t) {
  const std::vector<VariantTensor> &given = t.variantTensors;
  if (given.size() != s.variantTensors)
    return Status(StatusCode::InvalidArgument,
                  "the variant reads " + std::to_string(s.variantTensors) +
                      " run-time tensors (fmhajit_tensor's slots) and "
                      "Tensors::variantTensors gives " +
                      std::to_string(given.size()) + ": give " +
                      std::to_string(s.variantTensors) +
                      ", in slot order (Plan::variantTensorCount())");
  for (size_t i = 0; i < given.size(); ++i)
    if (!given[i].data || given[i].length < 1)
      return Status(StatusCode::InvalidArgument,
                    "Tensors::variantTensors[" + std::to_string(i) +
                        "] needs data and a length of at least 1 (an index "
                        "outside the tensor reads 0, so a tensor of one 0 "
                        "stands for none)");
  return Status();
}

// Pointers the plan needs but the caller left null, named by field.
static Status checkTensors(const detail::PlanState &s, const Tensors &t) {
  if (!t.q || !t.k || !t.v || !t.o)
    return invalid(
        "Tensors q, k, v and o must all point to the caller's memory");
  if (s.needsLse && !t.lse)
    return invalid(
        "the problem wants LSE: set Tensors::lse ([batch, headsQ, seqlenQ] "
        "floats, [headsQ, totalQ] under varlen)");
  if (s.needsWorkspace && !t.workspace)
    return invalid("this plan needs a workspace: set Tensors::workspace to "
                   "Plan::workspaceBytes() bytes of device memory");
  // The combine reads the partials 16 bytes a load (ir/SplitKvCombine.cpp).
  if (s.needsWorkspace && reinterpret_cast<uintptr_t>(t.workspace) % 16 != 0)
    return invalid("Tensors::workspace must be 16-byte aligned (as "
                   "cuMemAlloc's memory is)");
  if (s.needsCuSeqlens && (!t.cuSeqlensQ || !t.cuSeqlensK))
    return invalid(
        "a varlen plan on a GPU reads cu_seqlens from device memory: set "
        "Tensors::cuSeqlensQ and cuSeqlensK to device copies of the problem's");
  if (s.needsSlopes && !t.alibiSlopes)
    return invalid(
        "an ALiBi plan on a GPU reads its slopes from device memory: set "
        "Tensors::alibiSlopes to [headsQ] floats on the device");
  if (s.needsBias && !t.bias)
    return invalid("a bias plan reads its bias: set Tensors::bias to the fp32 "
                   "bias at Problem::biasStrides (device memory for a GPU "
                   "plan)");
  if (s.needsSinks && !t.sinks)
    return invalid("a sink plan reads one logit per query head: set "
                   "Tensors::sinks to [headsQ] floats (on the device for a "
                   "GPU plan; on the host, or give Problem::sinks)");
  if (const char *why = dropoutProblem(s, t.dropout))
    return invalid(why);
  if (s.needsBlockTable && !t.blockTable)
    return invalid(
        "a paged plan reads its block table: set Tensors::blockTable to the "
        "[batch, maxPagesPerSeq] int32 page indices");
  for (float descale : {t.descaleQ, t.descaleK, t.descaleV}) {
    if (!(descale > 0) || !std::isfinite(descale))
      return invalid("Tensors::descaleQ, descaleK and descaleV must be "
                     "finite and > 0 (1 when the fp8 values are not scaled)");
    if (!s.fp8Inputs && descale != 1)
      return invalid("Tensors::descaleQ, descaleK and descaleV scale fp8 "
                     "inputs only: leave them 1 for this plan's dtype");
  }
  if (s.needsDeviceLengths && !t.seqlensK)
    return invalid(
        "a paged plan on a GPU reads each sequence's key count from device "
        "memory: set Tensors::seqlensK to [batch] int32 on the device");
  return checkVariantTensors(s, t);
}

Status api::run(const Plan &plan, const Tensors &tensors) {
  const detail::PlanState *s = detail::PlanAccess::state(plan);
  if (!s)
    return invalid("the plan is empty: make one with fmhajit::api::plan()");
  if (s->isAppend)
    return invalid(
        "this plan appends to a K/V cache: call fmhajit::api::append(plan, "
        "AppendTensors) to run it");
  if (s->isBackward)
    return invalid("this plan is a backward pass: call "
                   "fmhajit::api::backward(plan, BackwardTensors) to run it");
  if (s->runners.empty())
    return invalid(
        "the plan was made with Options::load = false, so no kernel is loaded: "
        "plan again with Options::load = true");
  if (Status status = checkTensors(*s, tensors); !status.ok())
    return status;
  for (const std::unique_ptr<const StepRunner> &step : s->runners)
    if (llvm::Error err = step->run(tensors))
      return toStatus(std::move(err));
  return Status();
}
