//===- GpuKernel.h - A compiled, loaded GPU kernel ------------------------===//
//
// GpuKernel::load takes a resolved spec for a GPU target to a function the
// GPU can launch, in two timed steps (together: the JIT compile time):
//
//   codegen   spec -> PTX text or code object, through the KernelCache
//             (with the driver's compile options: NVPTX's PTX ISA is part
//             of the cache key)
//   load      the driver loads it (PTX -> SASS in cuModuleLoadDataEx,
//             hipModuleLoadData) and finds the function
//
// Around them the driver's kernel hooks (GpuDriver.h) check what differs
// by backend: the target runs on this GPU, the artifact's one parameter
// is this build's KernelArgs, the block fits. Loaded modules stay loaded
// for the life of the process, one per kernel name (GpuModule.h), so a
// second load of the same spec costs neither step.
//
// Launch geometry (ir/KernelAbi.h): one parameter, KernelArgs by value;
// gridDim.x = workItems(spec, params), or one per multiprocessor for a
// persistent kernel (walksWorkItems) where that measured faster;
// blockDim.x = warps * the target's wave size; dynamic shared memory as
// the driver's configureKernel says (NVPTX: the tile footprint; AMDGPU:
// none, the LDS is static).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "ir/KernelAbi.h"
#include "runtime/device/GpuDriver.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <optional>
#include <vector>

namespace fmhajit {

class GpuModule;
class GpuTimer;

/// Whether \p spec's kernel runs \p params on a block per multiprocessor
/// (walking work items) rather than a block per item: GpuKernel.cpp says
/// where each measured faster.
bool runsPersistent(const KernelSpec &spec, const KernelArgs &params);

/// What loading a kernel cost and where its code came from.
struct GpuLoadStats {
  ArtifactOrigin origin =
      ArtifactOrigin::Compiled; ///< of the PTX / code object
  double codegenMs = 0; ///< spec -> artifact, or the cache lookup on a hit
  double loadMs = 0;    ///< the driver's load; 0 when the module was loaded
  bool moduleReused = false; ///< this process had loaded it already
};

class GpuKernel {
public:
  /// Compiles (through \p cache) and loads the kernel of a resolved spec
  /// on \p driver's GPU; refuses targets this GPU cannot run and blocks
  /// that do not fit it.
  static llvm::Expected<GpuKernel>
  load(GpuDriver &driver, const KernelSpec &spec, KernelCache &cache);
  /// load() of each of \p specs, for the GPU of \p backend, side by side
  /// (compiler/Concurrently.h): the kernels in order, or the first failure
  /// in that order.
  static llvm::Expected<std::vector<GpuKernel>>
  loadAll(Backend backend, llvm::ArrayRef<KernelSpec> specs,
          KernelCache &cache);

  const KernelSpec &spec() const { return kernelSpec; }
  GpuDriver &driver() const { return *gpu; }
  const GpuLoadStats &loadStats() const { return stats; }
  const GpuKernelResources &resources() const { return res; }
  /// Bytes of dynamic shared memory each block gets.
  unsigned sharedBytes() const { return shape.sharedBytes; }
  unsigned blockThreads() const { return shape.blockThreads; }
  /// The driver's JIT info log of the module (registers, spills).
  const std::string &jitLog() const;

  /// The tensor maps of a TMA kernel for the problem of \p params, whose
  /// pointers are ignored, for launch() to bind to each call's pointers
  /// (GpuTensorMaps.h); std::nullopt when the kernel takes none, or launch()
  /// must encode them itself.
  std::optional<TensorMaps> prepareTensorMaps(const KernelArgs &params) const;

  /// Launches on \p stream (asynchronous: synchronize the stream to see
  /// failures inside the kernel); under v_pretranspose the pass that
  /// writes V^T into params.valuesT first. \p params holds device pointers. A
  /// TMA kernel's maps are \p prepared (prepareTensorMaps for the same problem)
  /// with \p params' pointers, else encoded here.
  llvm::Error launch(const KernelArgs &params, GpuStreamHandle stream,
                     const TensorMaps *prepared = nullptr) const;
  /// Launches between two events and waits: the kernel's milliseconds.
  llvm::Expected<float> launchTimed(const KernelArgs &params,
                                    GpuStreamHandle stream) const;
  /// The same with the events of \p timer, for loops that time many
  /// launches.
  llvm::Expected<float> launchTimed(const KernelArgs &params,
                                    GpuStreamHandle stream,
                                    GpuTimer &timer) const;

private:
  llvm::Error launchPretranspose(const KernelArgs &params,
                                 GpuStreamHandle stream) const;
  llvm::Error checkTailSplit(const KernelArgs &params) const;
  llvm::Error clearTailCounters(const KernelArgs &params,
                                GpuStreamHandle stream) const;

  GpuKernel(GpuDriver &driver, KernelSpec spec,
            std::shared_ptr<const GpuModule> module, GpuFunctionHandle fn)
      : gpu(&driver), kernelSpec(std::move(spec)), module(std::move(module)),
        fn(fn) {}

  GpuDriver *gpu;
  KernelSpec kernelSpec;
  std::shared_ptr<const GpuModule> module;
  GpuFunctionHandle fn;
  /// v_pretranspose: the pass that writes V^T, launched before fn.
  std::optional<GpuFunctionHandle> pretranspose;
  GpuLoadStats stats;
  GpuKernelResources res;
  GpuLaunchShape shape;
};

} // namespace fmhajit
