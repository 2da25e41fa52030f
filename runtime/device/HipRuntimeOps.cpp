//===- HipRuntimeOps.cpp - HipRuntime's memory, streams, events, launch ---===//
//
// The GpuDriver operations on the HIP runtime API. Each error names the
// HIP call (hipMalloc, hipMemcpy, hipModuleLaunchKernel...).
//
//===----------------------------------------------------------------------===//
#include "runtime/device/HipRuntime.h"
#include "specs/Errors.h"

using namespace fmhajit;
using namespace fmhajit::hip;

llvm::Expected<void *> HipRuntime::allocate(size_t bytes) {
  void *ptr = nullptr;
  if (llvm::Error err = check(fns.malloc(&ptr, bytes), "hipMalloc"))
    return std::move(err);
  return ptr;
}

void HipRuntime::release(void *ptr) { (void)fns.free(ptr); }

std::string HipRuntime::freeMemoryNote() {
  size_t free = 0, total = 0;
  if (fns.memGetInfo(&free, &total) != kSuccess)
    return "";
  return " (" + mebibytes(free) + " of " + mebibytes(total) + " free)";
}

llvm::Error HipRuntime::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (llvm::Error err =
          check(fns.memcpy(dst, src, bytes, kMemcpyHostToDevice), "hipMemcpy"))
    return err;
  return synchronize(nullptr); // GpuDriver: done on return
}

llvm::Error HipRuntime::copyToHost(void *dst, const void *src, size_t bytes) {
  return check(fns.memcpy(dst, src, bytes, kMemcpyDeviceToHost), "hipMemcpy");
}

llvm::Error HipRuntime::fill16(void *dst, uint16_t value, size_t count) {
  if (llvm::Error err = check(fns.memsetD16(dst, value, count), "hipMemsetD16"))
    return err;
  return synchronize(nullptr);
}

llvm::Error HipRuntime::fill32(void *dst, uint32_t value, size_t count) {
  if (llvm::Error err =
          check(fns.memsetD32(dst, int(value), count), "hipMemsetD32"))
    return err;
  return synchronize(nullptr);
}

llvm::Error HipRuntime::clear32Async(void *dst, size_t count,
                                     GpuStreamHandle stream) {
  return check(
      fns.memsetD32Async(dst, 0, count, static_cast<hipStream_t>(stream)),
      "hipMemsetD32Async");
}

llvm::Expected<GpuStreamHandle> HipRuntime::createStream() {
  hipStream_t stream = nullptr;
  if (llvm::Error err =
          check(fns.streamCreateWithFlags(&stream, kStreamNonBlocking),
                "hipStreamCreateWithFlags"))
    return std::move(err);
  return stream;
}

void HipRuntime::destroyStream(GpuStreamHandle stream) {
  (void)fns.streamDestroy(static_cast<hipStream_t>(stream));
}

llvm::Error HipRuntime::synchronize(GpuStreamHandle stream) {
  return check(fns.streamSynchronize(static_cast<hipStream_t>(stream)),
               "hipStreamSynchronize");
}

llvm::Expected<GpuEventHandle> HipRuntime::createEvent() {
  hipEvent_t event = nullptr;
  if (llvm::Error err = check(fns.eventCreate(&event), "hipEventCreate"))
    return std::move(err);
  return event;
}

void HipRuntime::destroyEvent(GpuEventHandle event) {
  (void)fns.eventDestroy(static_cast<hipEvent_t>(event));
}

llvm::Error HipRuntime::record(GpuEventHandle event, GpuStreamHandle stream) {
  return check(fns.eventRecord(static_cast<hipEvent_t>(event),
                               static_cast<hipStream_t>(stream)),
               "hipEventRecord");
}

llvm::Expected<float> HipRuntime::elapsedMs(GpuEventHandle begin,
                                            GpuEventHandle end) {
  if (llvm::Error err =
          check(fns.eventSynchronize(static_cast<hipEvent_t>(end)),
                "hipEventSynchronize"))
    return std::move(err);
  float ms = 0;
  if (llvm::Error err =
          check(fns.eventElapsedTime(&ms, static_cast<hipEvent_t>(begin),
                                     static_cast<hipEvent_t>(end)),
                "hipEventElapsedTime"))
    return std::move(err);
  return ms;
}

llvm::Expected<GpuLoadedImage>
HipRuntime::loadModule(const std::string &codeObject, const ArchInfo &arch) {
  hipModule_t module = nullptr;
  hipError_t result = fns.moduleLoadData(&module, codeObject.data());
  if (result != kSuccess)
    return makeError(ErrorKind::Driver,
                     llvm::toString(check(result, "hipModuleLoadData")) +
                         "; the code object is for " + arch.name +
                         ": use the target rocminfo names for this GPU");
  return GpuLoadedImage{module, ""};
}

void HipRuntime::unloadModule(GpuModuleHandle module) {
  (void)fns.moduleUnload(static_cast<hipModule_t>(module));
}

llvm::Expected<GpuFunctionHandle> HipRuntime::function(GpuModuleHandle module,
                                                       llvm::StringRef name) {
  hipFunction_t fn = nullptr;
  std::string symbol = name.str();
  if (fns.moduleGetFunction(&fn, static_cast<hipModule_t>(module),
                            symbol.c_str()) != kSuccess)
    return makeError(ErrorKind::Jit,
                     "the code object has no kernel named " + name +
                         " (the artifact does not match its spec)");
  return fn;
}

// The kernarg segment is the argument bytes: HIP copies `size` bytes from
// `args` into it at launch (HIP_LAUNCH_PARAM_BUFFER_POINTER).
llvm::Error HipRuntime::launch(GpuFunctionHandle fn, unsigned gridBlocks,
                               GpuLaunchShape shape, GpuStreamHandle stream,
                               const void *args, size_t argBytes,
                               const TensorMaps *maps) {
  if (maps)
    return GpuDriver::encodeTensorMap({}, nullptr); // refused: CUDA only
  size_t size = argBytes;
  void *extra[] = {kLaunchParamBufferPointer, const_cast<void *>(args),
                   kLaunchParamBufferSize, &size, kLaunchParamEnd};
  return check(
      fns.moduleLaunchKernel(static_cast<hipFunction_t>(fn), gridBlocks, 1, 1,
                             shape.blockThreads, 1, 1, shape.sharedBytes,
                             static_cast<hipStream_t>(stream), nullptr, extra),
      "hipModuleLaunchKernel");
}
