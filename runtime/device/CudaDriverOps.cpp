//===- CudaDriverOps.cpp - CudaDriver's memory, streams, events, launch ---===//
//
// The GpuDriver operations on the CUDA driver API. Each error names the
// driver call as users and tests know it (cuMemAlloc, cuMemcpyHtoD,
// cuLaunchKernel...).
//
//===----------------------------------------------------------------------===//
#include "runtime/device/CudaDriver.h"
#include "specs/Errors.h"

using namespace fmhajit;
using namespace fmhajit::cuda;

static CUdeviceptr devicePtr(const void *ptr) {
  return reinterpret_cast<CUdeviceptr>(ptr);
}

llvm::Expected<void *> CudaDriver::allocate(size_t bytes) {
  CUdeviceptr ptr = 0;
  if (llvm::Error err = check(fns.memAlloc(&ptr, bytes), "cuMemAlloc"))
    return std::move(err);
  return reinterpret_cast<void *>(ptr);
}

void CudaDriver::release(void *ptr) { (void)fns.memFree(devicePtr(ptr)); }

std::string CudaDriver::freeMemoryNote() {
  size_t free = 0, total = 0;
  if (fns.memGetInfo(&free, &total) != kSuccess)
    return "";
  return " (" + mebibytes(free) + " of " + mebibytes(total) + " free)";
}

llvm::Error CudaDriver::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (llvm::Error err =
          check(fns.memcpyHtoD(devicePtr(dst), src, bytes), "cuMemcpyHtoD"))
    return err;
  return synchronize(nullptr); // GpuDriver: done on return
}

llvm::Error CudaDriver::copyToHost(void *dst, const void *src, size_t bytes) {
  return check(fns.memcpyDtoH(dst, devicePtr(src), bytes), "cuMemcpyDtoH");
}

llvm::Error CudaDriver::fill16(void *dst, uint16_t value, size_t count) {
  if (llvm::Error err =
          check(fns.memsetD16(devicePtr(dst), value, count), "cuMemsetD16"))
    return err;
  return synchronize(nullptr);
}

llvm::Error CudaDriver::fill32(void *dst, uint32_t value, size_t count) {
  if (llvm::Error err =
          check(fns.memsetD32(devicePtr(dst), value, count), "cuMemsetD32"))
    return err;
  return synchronize(nullptr);
}

llvm::Error CudaDriver::clear32Async(void *dst, size_t count,
                                     GpuStreamHandle stream) {
  return check(fns.memsetD32Async(devicePtr(dst), 0, count,
                                  static_cast<CUstream>(stream)),
               "cuMemsetD32Async");
}

llvm::Expected<GpuStreamHandle> CudaDriver::createStream() {
  CUstream stream = nullptr;
  if (llvm::Error err = check(fns.streamCreate(&stream, kStreamNonBlocking),
                              "cuStreamCreate"))
    return std::move(err);
  return stream;
}

void CudaDriver::destroyStream(GpuStreamHandle stream) {
  (void)fns.streamDestroy(static_cast<CUstream>(stream));
}

llvm::Error CudaDriver::synchronize(GpuStreamHandle stream) {
  return check(fns.streamSynchronize(static_cast<CUstream>(stream)),
               "cuStreamSynchronize");
}

llvm::Expected<GpuEventHandle> CudaDriver::createEvent() {
  CUevent event = nullptr;
  if (llvm::Error err =
          check(fns.eventCreate(&event, kEventDefault), "cuEventCreate"))
    return std::move(err);
  return event;
}

void CudaDriver::destroyEvent(GpuEventHandle event) {
  (void)fns.eventDestroy(static_cast<CUevent>(event));
}

llvm::Error CudaDriver::record(GpuEventHandle event, GpuStreamHandle stream) {
  return check(fns.eventRecord(static_cast<CUevent>(event),
                               static_cast<CUstream>(stream)),
               "cuEventRecord");
}

llvm::Expected<float> CudaDriver::elapsedMs(GpuEventHandle begin,
                                            GpuEventHandle end) {
  if (llvm::Error err = check(fns.eventSynchronize(static_cast<CUevent>(end)),
                              "cuEventSynchronize"))
    return std::move(err);
  float ms = 0;
  if (llvm::Error err =
          check(fns.eventElapsedTime(&ms, static_cast<CUevent>(begin),
                                     static_cast<CUevent>(end)),
                "cuEventElapsedTime"))
    return std::move(err);
  return ms;
}

// The kernel's one parameter is passed by value: the driver copies
// argBytes from args at launch (kernelParams holds one pointer per
// parameter).
llvm::Error CudaDriver::launch(GpuFunctionHandle fn, unsigned gridBlocks,
                               GpuLaunchShape shape, GpuStreamHandle stream,
                               const void *args, size_t argBytes,
                               const TensorMaps *maps) {
  (void)argBytes; // the PTX declares the size; checkArtifact checked it
  void *params[] = {const_cast<void *>(args), const_cast<TensorMaps *>(maps)};
  if (!shape.overlapsPrevious)
    return check(fns.launchKernel(static_cast<CUfunction>(fn), gridBlocks, 1, 1,
                                  shape.blockThreads, 1, 1, shape.sharedBytes,
                                  static_cast<CUstream>(stream), params,
                                  nullptr),
                 "cuLaunchKernel");
  CUlaunchAttribute overlap;
  overlap.id = kLaunchAttrProgrammaticStreamSerialization;
  overlap.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config;
  config.gridDimX = gridBlocks;
  config.blockDimX = shape.blockThreads;
  config.sharedMemBytes = shape.sharedBytes;
  config.stream = static_cast<CUstream>(stream);
  config.attrs = &overlap;
  config.numAttrs = 1;
  return check(
      fns.launchKernelEx(&config, static_cast<CUfunction>(fn), params, nullptr),
      "cuLaunchKernelEx");
}

llvm::Error CudaDriver::replaceTensorMapAddress(void *map, const void *base) {
  if (!fns.tensorMapReplaceAddress)
    return makeError(ErrorKind::Unsupported,
                     "this CUDA driver lacks cuTensorMapReplaceAddress");
  return check(fns.tensorMapReplaceAddress(map, const_cast<void *>(base)),
               "cuTensorMapReplaceAddress");
}

// Zero fill past the view's edges, and no interleave.
llvm::Error CudaDriver::encodeTensorMap(const TensorMapRequest &r, void *map) {
  int swizzle = r.swizzleBytes == 128  ? kTensorMapSwizzle128
                : r.swizzleBytes == 64 ? kTensorMapSwizzle64
                                       : kTensorMapSwizzle32;
  int promotion = r.l2PromotionBytes == 256   ? kTensorMapL2Promote256
                  : r.l2PromotionBytes == 128 ? kTensorMapL2Promote128
                  : r.l2PromotionBytes == 64  ? kTensorMapL2Promote64
                                              : kTensorMapL2PromoteNone;
  int type = isFp8(r.dtype)          ? kTensorMapUint8
             : r.dtype == DType::F16 ? kTensorMapFloat16
                                     : kTensorMapBfloat16;
  const unsigned elementStrides[4] = {1, 1, 1, 1};
  if (llvm::Error err =
          check(fns.tensorMapEncodeTiled(
                    map, type, 4, const_cast<void *>(r.base), r.dims,
                    r.strideBytes, r.box, elementStrides, /*interleave=*/0,
                    swizzle, promotion, /*oobFill=*/0),
                "cuTensorMapEncodeTiled"))
    return makeError(ErrorKind::Driver, llvm::Twine("the tensor map of ") +
                                            r.tensor + ": " +
                                            llvm::toString(std::move(err)));
  return llvm::Error::success();
}
