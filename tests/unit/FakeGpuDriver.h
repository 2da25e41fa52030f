//===- FakeGpuDriver.h - A GpuDriver over host memory, for unit tests -----===//
//
// "Device" memory is host memory and launches are recorded. The fake runs
// AMDGPU code objects (compiled here, as the lit tests do), so its modules
// never meet a real CUDA driver's in the process table; each test loads its
// own spec, since that table outlives each test's fake. Its tensor maps
// spell out the request they encode, so that a plan's prepared maps bound
// to a call's pointers can be compared with the maps encoded for that call
// (GpuTensorMaps.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/GpuDriver.h"
#include "runtime/device/KernelAbiCheck.h"
#include "runtime/device/TensorMapBoxes.h"
#include "specs/Errors.h"
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fmhajit::unit {

/// A GpuDriver over host memory that records what it is asked to do.
class FakeDriver final : public GpuDriver {
public:
  struct Launch {
    unsigned grid = 0;
    GpuLaunchShape shape;
    GpuStreamHandle stream = nullptr;
    std::vector<char> args;
  };
  GpuDeviceInfo info{0, "Fake GPU", size_t(1) << 30, 8, std::string("gfx942")};
  size_t allocLimit = SIZE_MAX;
  int modulesLoaded = 0, buffersReleased = 0;
  int mapsEncoded = 0, addressesReplaced = 0;
  bool replacesAddresses = true; ///< as cuTensorMapReplaceAddress
  float clockMs = 0;             ///< advanced 1.5 ms by every record
  std::vector<Launch> launches;

  Backend backend() const override { return Backend::Amdgpu; }
  const GpuDeviceInfo &device() const override { return info; }
  std::string describe() const override { return info.name; }
  std::string noTargetReason() const override {
    return "a fake has every target";
  }
  llvm::Expected<void *> allocate(size_t bytes) override {
    if (bytes > allocLimit)
      return makeError(ErrorKind::Driver, "fakeMalloc failed: out of memory");
    return std::malloc(bytes);
  }
  void release(void *ptr) override {
    std::free(ptr);
    ++buffersReleased;
  }
  std::string freeMemoryNote() override { return " (1.0 MiB of 2.0 MiB free)"; }
  llvm::Error copyToDevice(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return llvm::Error::success();
  }
  llvm::Error copyToHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return llvm::Error::success();
  }
  llvm::Error fill16(void *dst, uint16_t value, size_t count) override {
    std::fill_n(static_cast<uint16_t *>(dst), count, value);
    return llvm::Error::success();
  }
  llvm::Error fill32(void *dst, uint32_t value, size_t count) override {
    std::fill_n(static_cast<uint32_t *>(dst), count, value);
    return llvm::Error::success();
  }
  llvm::Error clear32Async(void *dst, size_t count, GpuStreamHandle) override {
    std::fill_n(static_cast<uint32_t *>(dst), count, 0u);
    return llvm::Error::success();
  }
  llvm::Expected<GpuStreamHandle> createStream() override { return new int(0); }
  void destroyStream(GpuStreamHandle stream) override {
    delete static_cast<int *>(stream);
  }
  llvm::Error synchronize(GpuStreamHandle) override {
    return llvm::Error::success();
  }
  llvm::Expected<GpuEventHandle> createEvent() override { return new float(0); }
  void destroyEvent(GpuEventHandle event) override {
    delete static_cast<float *>(event);
  }
  llvm::Error record(GpuEventHandle event, GpuStreamHandle) override {
    *static_cast<float *>(event) = clockMs += 1.5f;
    return llvm::Error::success();
  }
  llvm::Expected<float> elapsedMs(GpuEventHandle begin,
                                  GpuEventHandle end) override {
    return *static_cast<float *>(end) - *static_cast<float *>(begin);
  }
  llvm::Expected<GpuLoadedImage> loadModule(const std::string &,
                                            const ArchInfo &) override {
    ++modulesLoaded;
    return GpuLoadedImage{new int(0), "fake log"};
  }
  void unloadModule(GpuModuleHandle module) override {
    delete static_cast<int *>(module);
  }
  llvm::Expected<GpuFunctionHandle> function(GpuModuleHandle module,
                                             llvm::StringRef) override {
    return module;
  }
  llvm::Error launch(GpuFunctionHandle, unsigned gridBlocks,
                     GpuLaunchShape shape, GpuStreamHandle stream,
                     const void *args, size_t argBytes,
                     const TensorMaps *) override {
    const char *bytes = static_cast<const char *>(args);
    launches.push_back({gridBlocks, shape, stream,
                        std::vector<char>(bytes, bytes + argBytes)});
    return llvm::Error::success();
  }
  // Word 0 holds the base, the rest every other field of the request.
  llvm::Error encodeTensorMap(const TensorMapRequest &r, void *map) override {
    ++mapsEncoded;
    auto *words = static_cast<uint64_t *>(map);
    std::fill_n(words, 16, 0);
    words[0] = reinterpret_cast<uintptr_t>(r.base);
    std::copy_n(r.dims, 4, words + 1);
    std::copy_n(r.strideBytes, 3, words + 5);
    std::copy_n(r.box, 4, words + 8);
    words[12] = r.swizzleBytes;
    words[13] = uint64_t(r.dtype);
    words[14] = r.l2PromotionBytes;
    return llvm::Error::success();
  }
  llvm::Error replaceTensorMapAddress(void *map, const void *base) override {
    if (!replacesAddresses)
      return GpuDriver::replaceTensorMapAddress(map, base);
    ++addressesReplaced;
    static_cast<uint64_t *>(map)[0] = reinterpret_cast<uintptr_t>(base);
    return llvm::Error::success();
  }
  llvm::Error checkTarget(const ArchInfo &arch) const override {
    if (arch.backend == Backend::Amdgpu)
      return llvm::Error::success();
    return makeError(ErrorKind::Usage,
                     "target " + arch.name + " does not run on the fake");
  }
  CompileOptions compileOptions() const override { return {}; }
  llvm::Error checkArtifact(llvm::StringRef bytes, llvm::StringRef name,
                            GpuKernelResources &resources) const override {
    auto metadata = checkKernelAbi(bytes, name);
    if (!metadata)
      return metadata.takeError();
    resources.codeObject = std::move(*metadata);
    return llvm::Error::success();
  }
  llvm::Expected<GpuLaunchShape>
  configureKernel(GpuFunctionHandle, const KernelSpec &spec,
                  GpuKernelResources &) override {
    return GpuLaunchShape{spec.warps * 64, 0};
  }
  const char *blockNoun() const override { return "workgroups"; }
};

} // namespace fmhajit::unit
