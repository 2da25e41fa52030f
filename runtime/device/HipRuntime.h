//===- HipRuntime.h - The HIP runtime, loaded at run time -----------------===//
//
// fmhajit needs no ROCm to build: HipRuntime dlopens libamdhip64.so (then
// .so.7, .so.6) when a kernel first runs on an AMD GPU, binds the entry
// points of HipApi.h, initializes HIP and describes device 0 (pick another
// with HIP_VISIBLE_DEVICES). A machine without HIP gets one
// ErrorKind::Driver error, never a crash.
//
// Every HIP call goes through check(), which turns a failing hipError_t
// into an ErrorKind::Driver error naming the call and HIP's
// hipGetErrorName / hipGetErrorString.
//
// HipRuntime is the HIP implementation of GpuDriver (GpuDriver.h); the
// overrides are in HipRuntimeOps.cpp (memory, streams, events, modules,
// launch) and HipKernelChecks.cpp (what loading a kernel checks on AMDGPU).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/GpuDriver.h"
#include "runtime/device/HipApi.h"
#include "runtime/device/SharedLibrary.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace fmhajit {

/// What fmhajit needs to know about the AMD GPU it runs on: the name as
/// hipDeviceGetName reports it, compute units, and the target named by
/// the GPU's gfx name (targetForGfxName).
struct HipDeviceInfo : GpuDeviceInfo {
  /// hipDeviceProp_t::gcnArchName, "gfx942:sramecc+:xnack-"; empty where
  /// HIP cannot report it (before ROCm 6).
  std::string gfxName;
};

/// The fmhajit target of a GPU whose gcnArchName is \p gfxName (the
/// processor before any ':' feature); null when fmhajit has none.
std::optional<std::string> targetForGfxName(llvm::StringRef gfxName);

class HipRuntime final : public GpuDriver {
public:
  /// The libraries get() tries, in order.
  static constexpr const char *kLibraryNames[] = {
      "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6"};

  /// The process-wide runtime, loaded and initialized on first use (a
  /// failure is remembered and returned again).
  static llvm::Expected<HipRuntime &> get();

  /// Loads HIP from the first of \p libraries that opens and initializes
  /// it, independently of get(); tests use it with libraries that do not
  /// exist.
  static llvm::Expected<std::unique_ptr<HipRuntime>>
  load(llvm::ArrayRef<const char *> libraries);

  HipRuntime(const HipRuntime &) = delete;
  HipRuntime &operator=(const HipRuntime &) = delete;

  /// The bound entry points. Call them through check().
  const hip::RuntimeApi &api() const { return fns; }

  /// Success when \p result is hipSuccess, else an ErrorKind::Driver error:
  /// "<call> failed: hipErrorX (HIP's description)".
  llvm::Error check(hip::hipError_t result, llvm::StringRef call) const;

  const HipDeviceInfo &device() const override { return info; }
  /// As hipRuntimeGetVersion reports it.
  int runtimeVersion() const { return version; }
  /// One line: "AMD Instinct MI300X (gfx942, 304 CUs, 192 GiB), HIP 6.2.41133
  /// (libamdhip64.so)".
  std::string describe() const override;
  std::string noTargetReason() const override;

  // GpuDriver.
  Backend backend() const override { return Backend::Amdgpu; }
  llvm::Expected<void *> allocate(size_t bytes) override;
  void release(void *ptr) override;
  std::string freeMemoryNote() override;
  llvm::Error copyToDevice(void *dst, const void *src, size_t bytes) override;
  llvm::Error copyToHost(void *dst, const void *src, size_t bytes) override;
  llvm::Error fill16(void *dst, uint16_t value, size_t count) override;
  llvm::Error fill32(void *dst, uint32_t value, size_t count) override;
  llvm::Error clear32Async(void *dst, size_t count,
                           GpuStreamHandle stream) override;
  llvm::Expected<GpuStreamHandle> createStream() override;
  void destroyStream(GpuStreamHandle stream) override;
  llvm::Error synchronize(GpuStreamHandle stream) override;
  llvm::Expected<GpuEventHandle> createEvent() override;
  void destroyEvent(GpuEventHandle event) override;
  llvm::Error record(GpuEventHandle event, GpuStreamHandle stream) override;
  llvm::Expected<float> elapsedMs(GpuEventHandle begin,
                                  GpuEventHandle end) override;
  llvm::Expected<GpuLoadedImage> loadModule(const std::string &codeObject,
                                            const ArchInfo &arch) override;
  void unloadModule(GpuModuleHandle module) override;
  llvm::Expected<GpuFunctionHandle> function(GpuModuleHandle module,
                                             llvm::StringRef name) override;
  llvm::Error launch(GpuFunctionHandle fn, unsigned gridBlocks,
                     GpuLaunchShape shape, GpuStreamHandle stream,
                     const void *args, size_t argBytes,
                     const TensorMaps *maps) override;
  llvm::Error checkTarget(const ArchInfo &arch) const override;
  CompileOptions compileOptions() const override { return {}; }
  llvm::Error checkArtifact(llvm::StringRef codeObject, llvm::StringRef name,
                            GpuKernelResources &resources) const override;
  llvm::Expected<GpuLaunchShape>
  configureKernel(GpuFunctionHandle fn, const KernelSpec &spec,
                  GpuKernelResources &resources) override;
  const char *blockNoun() const override { return "workgroups"; }

private:
  explicit HipRuntime(SharedLibrary library) : library(std::move(library)) {}
  llvm::Error bind();
  llvm::Error initialize();
  llvm::Error queryDevice();

  SharedLibrary library;
  hip::RuntimeApi fns{};
  int version = 0;
  HipDeviceInfo info;
};

} // namespace fmhajit
