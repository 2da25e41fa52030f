//===- CudaResources.cpp - Owners of device memory, streams and events ----===//
#include "runtime/device/CudaResources.h"
#include "specs/Errors.h"
#include "llvm/Support/Format.h"

using namespace fmhajit;
using namespace fmhajit::cuda;

static std::string mebibytes(size_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.1f MiB", double(bytes) / (1 << 20));
  return text;
}

llvm::Expected<DeviceBuffer> DeviceBuffer::create(CudaDriver &driver, size_t bytes,
                                                  llvm::StringRef what) {
  DeviceBuffer buffer;
  buffer.driver = &driver;
  if (bytes == 0)
    return std::move(buffer);
  CUdeviceptr ptr = 0;
  CUresult result = driver.api().memAlloc(&ptr, bytes);
  if (result != kSuccess) {
    size_t free = 0, total = 0;
    std::string room;
    if (driver.api().memGetInfo(&free, &total) == kSuccess)
      room = " (" + mebibytes(free) + " of " + mebibytes(total) + " free)";
    return makeError(ErrorKind::Driver,
                     "cannot allocate " + mebibytes(bytes) + " for " + what + " on the GPU" +
                         room + ": " + llvm::toString(driver.check(result, "cuMemAlloc")) +
                         "; use a smaller batch, fewer heads or shorter sequences");
  }
  buffer.ptr = ptr;
  buffer.bytes = bytes;
  return std::move(buffer);
}

llvm::Expected<DeviceBuffer> DeviceBuffer::upload(CudaDriver &driver, const void *data,
                                                  size_t bytes, llvm::StringRef what) {
  auto buffer = create(driver, bytes, what);
  if (!buffer)
    return buffer.takeError();
  if (llvm::Error err = buffer->copyFrom(data, bytes))
    return std::move(err);
  return buffer;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) {
  if (this != &other) {
    reset();
    driver = other.driver;
    ptr = other.ptr;
    bytes = other.bytes;
    other.ptr = 0;
    other.bytes = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr)
    (void)driver->api().memFree(ptr);
  ptr = 0;
  bytes = 0;
}

llvm::Error DeviceBuffer::copyFrom(const void *data, size_t count) {
  assert(count <= bytes && "copy past the end of a device buffer");
  if (count == 0)
    return llvm::Error::success();
  return driver->check(driver->api().memcpyHtoD(ptr, data, count), "cuMemcpyHtoD");
}

llvm::Error DeviceBuffer::copyTo(void *data, size_t count) const {
  assert(count <= bytes && "copy past the end of a device buffer");
  if (count == 0)
    return llvm::Error::success();
  return driver->check(driver->api().memcpyDtoH(data, ptr, count), "cuMemcpyDtoH");
}

// Quiet NaNs: fp32 0x7FC00000, fp16 0x7E00, bf16 0x7FC0.
llvm::Error DeviceBuffer::poison(DType type) {
  if (bytes == 0)
    return llvm::Error::success();
  switch (type) {
  case DType::F32:
    return driver->check(driver->api().memsetD32(ptr, 0x7FC00000u, bytes / 4), "cuMemsetD32");
  case DType::F16:
    return driver->check(driver->api().memsetD16(ptr, 0x7E00, bytes / 2), "cuMemsetD16");
  case DType::BF16:
    return driver->check(driver->api().memsetD16(ptr, 0x7FC0, bytes / 2), "cuMemsetD16");
  case DType::F8E4M3:
  case DType::F8E5M2:
    break;
  }
  return makeError(ErrorKind::Unsupported, "cannot poison fp8 outputs");
}

llvm::Expected<CudaStream> CudaStream::create(CudaDriver &driver) {
  CUstream stream = nullptr;
  if (llvm::Error err = driver.check(driver.api().streamCreate(&stream, kStreamNonBlocking),
                                     "cuStreamCreate"))
    return std::move(err);
  return CudaStream(driver, stream);
}

CudaStream::~CudaStream() {
  if (stream)
    (void)driver->api().streamDestroy(stream);
}

llvm::Error CudaStream::synchronize() const {
  return driver->check(driver->api().streamSynchronize(stream), "cuStreamSynchronize");
}

llvm::Expected<CudaTimer> CudaTimer::create(CudaDriver &driver) {
  CudaTimer timer(driver);
  for (CUevent *event : {&timer.begin, &timer.end})
    if (llvm::Error err =
            driver.check(driver.api().eventCreate(event, kEventDefault), "cuEventCreate"))
      return std::move(err); // the destructor frees the first if the second failed
  return std::move(timer);
}

CudaTimer::~CudaTimer() {
  for (CUevent event : {begin, end})
    if (event)
      (void)driver->api().eventDestroy(event);
}

llvm::Error CudaTimer::start(CUstream stream) {
  return driver->check(driver->api().eventRecord(begin, stream), "cuEventRecord");
}

llvm::Error CudaTimer::stop(CUstream stream) {
  return driver->check(driver->api().eventRecord(end, stream), "cuEventRecord");
}

llvm::Expected<float> CudaTimer::elapsedMs() {
  if (llvm::Error err = driver->check(driver->api().eventSynchronize(end), "cuEventSynchronize"))
    return std::move(err);
  float ms = 0;
  if (llvm::Error err =
          driver->check(driver->api().eventElapsedTime(&ms, begin, end), "cuEventElapsedTime"))
    return std::move(err);
  return ms;
}
