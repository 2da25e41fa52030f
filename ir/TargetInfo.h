//===- TargetInfo.h - The questions a recipe asks of its target -----------===//
//
// Recipes (ForwardKernel, ...) are written once; a TargetInfo answers how a
// kernel is entered (a host work loop, a GPU grid), and supplies the fast
// math the online softmax needs. Only ir/targets/* implement it, and only
// they may name target intrinsics.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/ArchTable.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace fmhajit {

class TileOps;

/// Choices that change a kernel's code besides its spec.
struct EmitOptions {
  /// GPU waits on mbarriers give up after kBoundedWaitSeconds with a
  /// message and a trap instead of hanging: a debugging aid for a ring
  /// whose phases disagree (FMHAJIT_BOUNDED_WAITS=1).
  bool boundedWaits = false;
  /// NVPTX wgmma: block 0's consumer warpgroups stamp %clock64 at their
  /// products' issue and completion into the module's fmhajit_timeline
  /// (ir/targets/NvptxTimeline.h): a profiling aid (FMHAJIT_TIMELINE).
  bool timeline = false;
  /// NVPTX tensor-core tiles under pack_gqa: the softmax skips the halves
  /// of a warp's 16 rows that lie past the item's query rows (a decode
  /// tile packs a GQA group's few rows at the top of its first warp). On by
  /// default since session 35 (4% faster on short decode rows, the same on
  /// long ones); FMHAJIT_DEAD_ROWS=0 runs the full softmax.
  bool skipDeadRows = true;
  /// NVPTX: the PTX ISA the module is assembled as (80 for 8.0), for
  /// instructions newer than the target's oldest ISA; 0 where unknown.
  unsigned ptxVersion = 0;
};
inline constexpr unsigned kBoundedWaitSeconds = 4;

class TargetInfo {
public:
  virtual ~TargetInfo();

  EmitOptions options;

  /// Creates kernel \p name taking a pointer to \p params and emits
  /// body(params, workItem) for each work item one invocation runs (host: a
  /// range given by the caller; GPU: one item from the block index).
  virtual llvm::Function *emitKernel(
      llvm::Module &m, llvm::StringRef name, llvm::StructType *params,
      llvm::function_ref<void(llvm::IRBuilderBase &b, llvm::Value *params,
                              llvm::Value *workItem)>
          body) = 0;

  /// 2^x for float scalars or vectors, to ~2 ulp; exactly 0 for x < -126
  /// (so masked scores, -inf, contribute nothing) and NaN for NaN.
  virtual llvm::Value *exp2(llvm::IRBuilderBase &b, llvm::Value *x) = 0;

  /// log2(x) for a float scalar or vector, x > 0; used in epilogues only.
  virtual llvm::Value *log2(llvm::IRBuilderBase &b, llvm::Value *x);

  /// 1/x for a float scalar or vector, x >= 1, to ~1 ulp. Default: an exact
  /// division; NVPTX: rcp.approx, one instruction where div.rn.f32 is a
  /// dozen and a slow-path call (80 of them made a soft-capped kernel).
  virtual llvm::Value *reciprocal(llvm::IRBuilderBase &b, llvm::Value *x);

  /// \p pointer (or an i64) through a copy the optimizer cannot see
  /// through, for a loop-varying base whose element addresses are constants
  /// (or multiples of it) off it: LICM would otherwise reassociate base +
  /// lane + constant into one hoisted, register-holding address per element.
  /// Default: \p pointer itself; NVPTX: an opaque mov.b64 (the ldmatrix
  /// bases do the same).
  virtual llvm::Value *opaqueBase(llvm::IRBuilderBase &, llvm::Value *pointer) {
    return pointer;
  }

  /// A hint that the global memory at \p pointer will be read soon: the
  /// line moves toward the cache a later load hits. Default: nothing (the
  /// host's caches and the AMDGPU loads need no hint); NVPTX:
  /// prefetch.global.L1, for the block-table entries of a paged cache's next
  /// key tile (ForwardKernel.cpp).
  virtual void prefetch(llvm::IRBuilderBase &, llvm::Value *pointer) {}

  /// A float scalar or vector rounded (to nearest even) to the storage type
  /// of \p t (fp32, fp16, bf16), for kernels that store outside TileOps.
  virtual llvm::Value *narrow(llvm::IRBuilderBase &b, llvm::Value *x, DType t);

  /// The threads that run one work item together, for kernels written
  /// without TileOps (splitkv_combine, append_kv): this one's index (i32)
  /// and their count. Host: 0 of 1; GPU: the block's threads.
  virtual llvm::Value *itemThread(llvm::IRBuilderBase &b);
  virtual unsigned itemThreads() const { return 1; }
  /// \p bytes that every thread of a work item sees (GPU: the block's
  /// shared memory, which the launch sizes by tileFootprintBytes), and a
  /// barrier among those threads. Host: a stack buffer, and no barrier.
  virtual llvm::Value *itemScratch(llvm::IRBuilderBase &b, unsigned bytes);
  virtual void itemBarrier(llvm::IRBuilderBase &) {}

  /// The tile vocabulary implementation for this target.
  virtual std::unique_ptr<TileOps> createTileOps(llvm::IRBuilderBase &b) = 0;

  /// Kernels the kernel's launch runs beside it, added to its module
  /// \p m (NVPTX: v_pretranspose's pass, NvptxValuePretranspose.h).
  virtual void emitSiblingKernels(llvm::Module &) {}

  /// tanh(x) built on exp2 and reciprocal:
  /// sign(x) * (1 - 2 * reciprocal(2^(2|x|*log2e) + 1)).
  llvm::Value *tanh(llvm::IRBuilderBase &b, llvm::Value *x);
};

/// The TargetInfo for a resolved spec's target, or an Unsupported error.
llvm::Expected<std::unique_ptr<TargetInfo>>
createTargetInfo(const KernelSpec &spec, const ArchInfo &arch);

/// Named constants of the softmax math.
inline constexpr double kLog2e = 1.4426950408889634;
inline constexpr double kLn2 = 0.6931471805599453;

} // namespace fmhajit
