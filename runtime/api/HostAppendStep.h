//===- HostAppendStep.h - An append plan's launch on the host -------------===//
//
// One append_kv launch (PagedKv.h's makeAppendKvParams) on the caller's
// buffers. The lengths and block table are the caller's memory and the
// kernel writes where they say, so run() first checks that every row it
// will write lies in the cache: lengths + newTokens within a sequence's
// rows, page indices in use within the pool.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/AppendLowering.h"
#include "runtime/api/PlanState.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/Rotary.h"
#include <memory>

namespace fmhajit {

class HostAppendStep : public AppendRunner {
public:
  /// \p tables: the plan's cos/sin tables (empty without rotary).
  HostAppendStep(HostKernel kernel, AppendKvProblem problem,
                 std::vector<int32_t> seqlens, RotaryTables tables,
                 std::shared_ptr<HostExecutor> executor)
      : kernel(std::move(kernel)), problem(std::move(problem)),
        seqlens(std::move(seqlens)), tables(std::move(tables)),
        executor(std::move(executor)) {}

  llvm::Error run(const api::AppendTensors &tensors) const override;

private:
  llvm::Error checkCache(const int32_t *blockTable,
                         const int32_t *lengths) const;

  HostKernel kernel;
  AppendKvProblem problem;
  std::vector<int32_t>
      seqlens; ///< the problem's, for a null AppendTensors::seqlens
  RotaryTables tables;
  std::shared_ptr<HostExecutor> executor;
};

} // namespace fmhajit
