//===- CudaDriver.h - The CUDA driver, loaded at run time -----------------===//
//
// fmhajit needs no CUDA to build: CudaDriver dlopens libcuda.so.1 when a
// kernel first runs on a GPU, resolves the entry points of CudaApi.h,
// initializes the driver and makes device 0's primary context current. A
// machine without a driver gets one ErrorKind::Driver error, never a crash.
//
// Every driver call goes through check(), which turns a failing CUresult
// into an ErrorKind::Driver error naming the call and the driver's
// cuGetErrorName / cuGetErrorString. The device is the first one the
// process sees; pick another with CUDA_VISIBLE_DEVICES.
//
// CudaDriver is the CUDA implementation of GpuDriver (GpuDriver.h); the
// overrides are in CudaDriverOps.cpp (memory, streams, events, launch),
// CudaModuleLoad.cpp (the PTX JIT and its logs) and CudaKernelChecks.cpp
// (what loading a kernel checks on NVPTX).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/CudaApi.h"
#include "runtime/device/CudaTargets.h"
#include "runtime/device/GpuDriver.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace fmhajit {

/// What fmhajit needs to know about the GPU it runs on.
/// GpuDeviceInfo's target is targetForCapability(cc); computeUnits counts
/// streaming multiprocessors.
struct CudaDeviceInfo : GpuDeviceInfo {
  ComputeCapability cc; ///< {9, 0}
  int maxThreadsPerBlock = 0;
  int maxSharedPerBlock = 0;      ///< bytes, without opting in
  int maxSharedPerBlockOptin = 0; ///< bytes, after opting in per kernel
};

class CudaDriver final : public GpuDriver {
public:
  /// The library get() loads.
  static constexpr const char *kLibraryName = "libcuda.so.1";

  /// The process-wide driver, loaded and initialized on first use (a
  /// failure is remembered and returned again); its context is made
  /// current on the calling thread.
  static llvm::Expected<CudaDriver &> get();

  /// Loads the driver from \p library and initializes it, independently of
  /// get(); tests use it with a library that does not exist.
  static llvm::Expected<std::unique_ptr<CudaDriver>> load(const char *library);

  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;

  /// The resolved entry points. Call them through check().
  const cuda::DriverApi &api() const { return fns; }

  /// Success when \p result is CUDA_SUCCESS, else an ErrorKind::Driver
  /// error: "<call> failed: CUDA_ERROR_X (the driver's description)".
  llvm::Error check(cuda::CUresult result, llvm::StringRef call) const;

  /// Makes this driver's context current on the calling thread (once per
  /// thread; get() does it for its caller).
  llvm::Error makeCurrent() const;

  const CudaDeviceInfo &device() const override { return info; }
  cuda::CUcontext context() const { return ctx; }
  /// As cuDriverGetVersion reports it, e.g. 12080.
  int driverVersion() const { return version; }
  /// The PTX ISA to emit for this driver (ptxVersionForDriver), 0 when the
  /// driver predates the table and each target's minimum is used.
  unsigned ptxVersion() const { return ptxVersionForDriver(version); }
  /// A note for the user when ptxVersion() is 0, else empty.
  std::string ptxNote() const;
  /// One line: "NVIDIA H100 (sm_90a, 132 SMs, 80 GiB), driver 12.8, PTX 8.7".
  std::string describe() const override;
  std::string noTargetReason() const override;

  // GpuDriver.
  Backend backend() const override { return Backend::Nvptx; }
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
  llvm::Expected<GpuLoadedImage> loadModule(const std::string &ptx,
                                            const ArchInfo &arch) override;
  void unloadModule(GpuModuleHandle module) override;
  llvm::Expected<std::string> readGlobal(GpuModuleHandle module,
                                         llvm::StringRef name) override;
  llvm::Expected<GpuFunctionHandle> function(GpuModuleHandle module,
                                             llvm::StringRef name) override;
  llvm::Error launch(GpuFunctionHandle fn, unsigned gridBlocks,
                     GpuLaunchShape shape, GpuStreamHandle stream,
                     const void *args, size_t argBytes,
                     const TensorMaps *maps) override;
  llvm::Error encodeTensorMap(const TensorMapRequest &request,
                              void *map) override;
  llvm::Error replaceTensorMapAddress(void *map, const void *base) override;
  llvm::Error checkTarget(const ArchInfo &arch) const override;
  CompileOptions compileOptions() const override {
    return compileOptionsFromEnvironment(ptxVersion());
  }
  llvm::Error checkArtifact(llvm::StringRef ptx, llvm::StringRef name,
                            GpuKernelResources &resources) const override;
  llvm::Expected<GpuLaunchShape>
  configureKernel(GpuFunctionHandle fn, const KernelSpec &spec,
                  GpuKernelResources &resources) override;
  const char *blockNoun() const override { return "thread blocks"; }

private:
  explicit CudaDriver(void *library) : library(library) {}
  llvm::Error resolve();
  llvm::Error initialize();
  llvm::Error queryDevice();

  void *library;
  cuda::DriverApi fns{};
  int version = 0;
  cuda::CUcontext ctx = nullptr;
  CudaDeviceInfo info;
};

} // namespace fmhajit
