//===- GpuForwardStep.h - A plan's launches on a GPU ----------------------===//
//
// The forward kernel of a plan (fwd, fwd_splitkv or fwd_paged) and, when
// the plan cuts key ranges, splitkv_combine after it on the same stream.
// Every device pointer of the call comes from the caller's Tensors
// (cu_seqlens, ALiBi slopes, the block table and key lengths, the
// workspace, which holds split-KV's partials or v_pretranspose's V^T); the
// plan's only device memory is its block map (BlockSparsity.h) and its split
// schedule (SplitSchedule.h), which depend on the planned shapes alone and are
// uploaded once when the plan loads. run() checks what it can without reading
// the GPU's (a paged plan's block table is not checked, as in FlashAttention's
// and FlashInfer's paged kernels). CUDA and HIP plans both run through it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "runtime/api/PlanState.h"
#include "runtime/device/GpuForwardLaunch.h"
#include "runtime/device/GpuResources.h"
#include "runtime/device/SplitKv.h"
#include "runtime/device/TailSplit.h"
#include <memory>
#include <optional>

namespace fmhajit {

/// A split tail (TailSplit.h) and where its slice of the workspace starts
/// (bytes).
struct GpuTailSlice {
  TailSplit split;
  int64_t offset = 0;
};

class GpuForwardStep : public StepRunner {
public:
  /// \p params: everything but the caller's pointers (numSplits set for a
  /// split plan). \p kernels: the combine too, for a plan with several parts.
  /// \p kvAlignment: the bytes K and V must start on (16 for pipeline mma,
  /// whose cp.async copies K/V rows 16 bytes at a time).
  /// \p blockMap: the device copy of the block map \p params point at, or
  /// null; \p schedule: the device copy of the split schedule, or null.
  /// A TMA kernel's tensor maps are prepared here, once, and bound to
  /// each run's pointers (GpuTensorMaps.h).
  GpuForwardStep(GpuForwardLaunch kernels, const KernelArgs &params,
                 void *stream, unsigned kvAlignment,
                 SplitWorkspaceLayout workspace,
                 std::optional<int64_t> valuesTOffset = std::nullopt,
                 std::shared_ptr<const GpuBuffer> blockMap = nullptr,
                 std::shared_ptr<const GpuBuffer> schedule = nullptr,
                 std::optional<GpuTailSlice> tail = std::nullopt)
      : kernels(std::move(kernels)), params(params), stream(stream),
        kvAlignment(kvAlignment), workspace(workspace),
        valuesTOffset(valuesTOffset), blockMap(std::move(blockMap)),
        schedule(std::move(schedule)), tail(tail),
        maps(this->kernels.kernel.prepareTensorMaps(params)) {}

  /// Launches on Tensors::stream, else the problem's stream; asynchronous.
  llvm::Error run(const api::Tensors &tensors) const override;

private:
  GpuForwardLaunch kernels;
  KernelArgs params;
  void *stream;
  unsigned kvAlignment;
  SplitWorkspaceLayout workspace;
  /// v_pretranspose: where V^T lies in the workspace (bytes).
  std::optional<int64_t> valuesTOffset;
  std::shared_ptr<const GpuBuffer> blockMap, schedule;
  /// The last round's items cut by keys, with their counters and partials.
  std::optional<GpuTailSlice> tail;
  std::optional<TensorMaps> maps;
};

} // namespace fmhajit
