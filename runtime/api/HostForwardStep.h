//===- HostForwardStep.h - A plan's launches on the host ------------------===//
//
// Host step runners hold a loaded kernel and a HostBinding: the kernel's
// KernelArgs with everything but the caller's pointers filled in, and the
// host copies of cu_seqlens, ALiBi slopes and sinks those parameters need.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "runtime/api/BlockSparsity.h"
#include "runtime/api/PlanState.h"
#include "runtime/api/SplitSchedule.h"
#include "runtime/api/TensorLayouts.h"
#include "runtime/device/HostExecutor.h"
#include <memory>
#include <vector>

namespace fmhajit {

/// The process's executor with \p threads workers (0: one per hardware
/// thread), made on first use and shared by every plan that asks for it.
std::shared_ptr<HostExecutor> sharedHostExecutor(unsigned threads);

/// KernelArgs waiting for the caller's pointers, and the block map they
/// point at (kept alive here, with the plan).
class HostBinding {
public:
  HostBinding(const KernelArgs &params, std::vector<int32_t> cuSeqlensQ,
              std::vector<int32_t> cuSeqlensK, std::vector<float> alibiSlopes,
              std::vector<float> sinks,
              std::shared_ptr<const BlockMap> blockMap = nullptr)
      : params(params), cuSeqlensQ(std::move(cuSeqlensQ)),
        cuSeqlensK(std::move(cuSeqlensK)), alibiSlopes(std::move(alibiSlopes)),
        sinks(std::move(sinks)), blockMap(std::move(blockMap)) {
    if (this->blockMap)
      bindBlockMap(this->params, *this->blockMap,
                   this->blockMap->entries.data());
  }

  /// Points the parameters at \p s (kept alive here): numSplits, the
  /// schedule and splitTiles.
  void bindSchedule(std::shared_ptr<const SplitSchedule> s) {
    schedule = std::move(s);
    params.numSplits = schedule->parts;
    params.splitTiles = schedule->splitTiles;
    params.splitSchedule = schedule->entries.data();
  }

  /// The parameters with \p t's pointers; cu_seqlens, slopes and sinks the
  /// caller leaves null come from this binding's copies.
  KernelArgs bind(const api::Tensors &t) const {
    KernelArgs p = withTensorPointers(params, t);
    if (!cuSeqlensQ.empty()) {
      p.cuSeqlensQ = t.cuSeqlensQ ? t.cuSeqlensQ : cuSeqlensQ.data();
      p.cuSeqlensK = t.cuSeqlensK ? t.cuSeqlensK : cuSeqlensK.data();
    }
    if (!alibiSlopes.empty())
      p.alibiSlopes = t.alibiSlopes ? t.alibiSlopes : alibiSlopes.data();
    p.sinks = t.sinks ? t.sinks : sinks.empty() ? nullptr : sinks.data();
    return p;
  }

private:
  KernelArgs params;
  std::vector<int32_t> cuSeqlensQ, cuSeqlensK;
  std::vector<float> alibiSlopes;
  std::vector<float> sinks;
  std::shared_ptr<const BlockMap> blockMap;
  std::shared_ptr<const SplitSchedule> schedule;
};

/// A single-pass forward kernel on the host.
class HostForwardStep : public StepRunner {
public:
  HostForwardStep(HostKernelFn fn, HostBinding binding,
                  std::shared_ptr<HostExecutor> executor, int64_t items)
      : fn(fn), binding(std::move(binding)), executor(std::move(executor)),
        items(items) {}

  llvm::Error run(const api::Tensors &tensors) const override;

private:
  HostKernelFn fn;
  HostBinding binding;
  std::shared_ptr<HostExecutor> executor;
  int64_t items;
};

} // namespace fmhajit
