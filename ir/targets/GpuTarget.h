//===- GpuTarget.h - What GPU tile code asks of NVPTX and AMDGPU ----------===//
//
// GPU TileOps are written once over this interface; NVPTX and AMDGPU answer
// thread ids, barriers and where shared memory (LDS) lives.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "specs/pipelines/TileRules.h"
#include "llvm/ADT/SmallVector.h"

namespace fmhajit {

class GpuTargetInfo : public TargetInfo {
public:
  GpuTargetInfo(const KernelSpec &spec, const ArchInfo &arch)
      : spec(spec), arch(arch) {}

  /// Threads in a block (workgroup).
  unsigned numThreads() const { return blockWarps(spec) * arch.waveSize; }
  unsigned waveSize() const { return arch.waveSize; }
  const KernelSpec &kernelSpec() const { return spec; }

  /// This thread's index in its block, as i32.
  virtual llvm::Value *threadId(llvm::IRBuilderBase &b) = 0;
  /// The block's index in the 1-D grid, as i32.
  virtual llvm::Value *blockId(llvm::IRBuilderBase &b) = 0;
  /// A block-wide barrier that also orders shared-memory accesses.
  virtual void barrier(llvm::IRBuilderBase &b) = 0;
  /// A pointer (address space 3) to the block's \p bytes of shared memory.
  virtual llvm::Value *sharedMemory(llvm::IRBuilderBase &b, unsigned bytes) = 0;

  /// Under warp specialization (usesTensorMaps) the recipe is emitted once
  /// per role, and createTileOps answers for the role being emitted.
  /// Transposer: the fp8 producer warps that turn V into V^T.
  enum class WarpRole { Whole, Producer, Transposer, Consumers };
  WarpRole warpRole = WarpRole::Whole;
  /// The kernel's tensor maps (a generic pointer to its TensorMaps
  /// parameter) when it loads by TMA, else null.
  llvm::Value *tensorMaps = nullptr;
  /// The TMA ring's load counters (TmaRing::emitCounters) when it loads by
  /// TMA, else null.
  llvm::Value *ringCounters = nullptr;

  std::unique_ptr<TileOps> createTileOps(llvm::IRBuilderBase &b) override;
  llvm::Value *itemThread(llvm::IRBuilderBase &b) override {
    return threadId(b);
  }
  unsigned itemThreads() const override { return numThreads(); }
  llvm::Value *itemScratch(llvm::IRBuilderBase &b, unsigned bytes) override {
    return sharedMemory(b, bytes);
  }
  void itemBarrier(llvm::IRBuilderBase &b) override { barrier(b); }

  /// Creates kernel \p name with a parameter pointing at the KernelArgs (and
  /// the target's extraParams),
  /// lets the target declare its conventions (declareKernel), and emits the
  /// body for this block's work item.
  llvm::Function *
  emitKernel(llvm::Module &m, llvm::StringRef name, llvm::StructType *params,
             llvm::function_ref<void(llvm::IRBuilderBase &, llvm::Value *,
                                     llvm::Value *)>
                 body) final;

protected:
  /// The address space of the kernel's parameter pointer.
  virtual unsigned paramAddressSpace() const { return 0; }
  /// Sets the calling convention and attributes of a new kernel (and any
  /// module-level settings the target needs).
  virtual void declareKernel(llvm::Function &fn, llvm::StructType *params) = 0;
  /// Parameters after the KernelArgs pointer (NVPTX: the tensor maps).
  virtual llvm::SmallVector<llvm::Type *, 1>
  extraParams(llvm::LLVMContext &) const {
    return {};
  }
  /// Emits the body for this block's work item, counted from the end so the
  /// heaviest causal tiles start first: item = total - 1 - blockId.
  virtual void
  emitBlockWorkItem(llvm::IRBuilderBase &b, llvm::Value *params,
                    llvm::function_ref<void(llvm::IRBuilderBase &,
                                            llvm::Value *, llvm::Value *)>
                        body);

  KernelSpec spec;
  const ArchInfo &arch;
};

/// The simt tile ops: tiles in shared memory, each thread a micro-tile.
std::unique_ptr<TileOps> createGpuSimtTileOps(llvm::IRBuilderBase &b,
                                              GpuTargetInfo &target);

/// The mma tile ops (NVPTX mma.sync m16n8k16, sm_80+).
std::unique_ptr<TileOps> createNvptxMmaTileOps(llvm::IRBuilderBase &b,
                                               GpuTargetInfo &target);

/// The backward's tile ops on pipeline mma (NVPTX mma.sync m16n8k16).
std::unique_ptr<TileOps> createNvptxBackwardTileOps(llvm::IRBuilderBase &b,
                                                    GpuTargetInfo &target);

/// The backward's tile ops on pipeline wgmma (sm_90a).
std::unique_ptr<TileOps> createNvptxWgmmaBackwardTileOps(llvm::IRBuilderBase &b,
                                                         GpuTargetInfo &target);

/// The wgmma tile ops (NVPTX wgmma m64nNk16, sm_90a).
std::unique_ptr<TileOps> createNvptxWgmmaTileOps(llvm::IRBuilderBase &b,
                                                 GpuTargetInfo &target);
/// Ping-pong under the TMA ring: the last consumer warpgroup hands the
/// first its first turn on the tensor cores. Once per block, before the
/// consumers walk their work items: each item's last turn hands the next
/// item's first on.
void emitFirstProductTurn(llvm::IRBuilderBase &b, GpuTargetInfo &target);

std::unique_ptr<TargetInfo> createNvptxTargetInfo(const KernelSpec &spec,
                                                  const ArchInfo &arch);

} // namespace fmhajit
