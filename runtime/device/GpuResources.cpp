//===- GpuResources.cpp - Owners of device memory, streams and events -----===//
#include "runtime/device/GpuResources.h"
#include "specs/Errors.h"

using namespace fmhajit;

llvm::Expected<GpuBuffer> GpuBuffer::create(GpuDriver &driver, size_t bytes,
                                            llvm::StringRef what) {
  GpuBuffer buffer;
  buffer.driver = &driver;
  if (bytes == 0)
    return std::move(buffer);
  auto ptr = driver.allocate(bytes);
  if (!ptr)
    return makeError(
        ErrorKind::Driver,
        "cannot allocate " + mebibytes(bytes) + " for " + what + " on the GPU" +
            driver.freeMemoryNote() + ": " + llvm::toString(ptr.takeError()) +
            "; use a smaller batch, fewer heads or shorter sequences");
  buffer.ptr = *ptr;
  buffer.bytes = bytes;
  return std::move(buffer);
}

llvm::Expected<GpuBuffer> GpuBuffer::upload(GpuDriver &driver, const void *data,
                                            size_t bytes,
                                            llvm::StringRef what) {
  auto buffer = create(driver, bytes, what);
  if (!buffer)
    return buffer.takeError();
  if (llvm::Error err = buffer->copyFrom(data, bytes))
    return std::move(err);
  return buffer;
}

GpuBuffer &GpuBuffer::operator=(GpuBuffer &&other) {
  if (this != &other) {
    reset();
    driver = other.driver;
    ptr = other.ptr;
    bytes = other.bytes;
    other.ptr = nullptr;
    other.bytes = 0;
  }
  return *this;
}

void GpuBuffer::reset() {
  if (ptr)
    driver->release(ptr);
  ptr = nullptr;
  bytes = 0;
}

llvm::Error GpuBuffer::copyFrom(const void *data, size_t count) {
  assert(count <= bytes && "copy past the end of a device buffer");
  if (count == 0)
    return llvm::Error::success();
  return driver->copyToDevice(ptr, data, count);
}

llvm::Error GpuBuffer::copyTo(void *data, size_t count) const {
  assert(count <= bytes && "copy past the end of a device buffer");
  if (count == 0)
    return llvm::Error::success();
  return driver->copyToHost(data, ptr, count);
}

// Quiet NaNs: fp32 0x7FC00000, fp16 0x7E00, bf16 0x7FC0.
llvm::Error GpuBuffer::poison(DType type) {
  if (bytes == 0)
    return llvm::Error::success();
  switch (type) {
  case DType::F32:
    return driver->fill32(ptr, 0x7FC00000u, bytes / 4);
  case DType::F16:
    return driver->fill16(ptr, 0x7E00, bytes / 2);
  case DType::BF16:
    return driver->fill16(ptr, 0x7FC0, bytes / 2);
  case DType::F8E4M3:
  case DType::F8E5M2:
    break;
  }
  return makeError(ErrorKind::Unsupported, "cannot poison fp8 outputs");
}

llvm::Expected<GpuStream> GpuStream::create(GpuDriver &driver) {
  auto stream = driver.createStream();
  if (!stream)
    return stream.takeError();
  return GpuStream(driver, *stream);
}

GpuStream::~GpuStream() {
  if (stream)
    driver->destroyStream(stream);
}

llvm::Expected<GpuTimer> GpuTimer::create(GpuDriver &driver) {
  GpuTimer timer(driver);
  for (GpuEventHandle *event : {&timer.begin, &timer.end}) {
    auto made = driver.createEvent();
    if (!made)
      return made
          .takeError(); // the destructor frees the first if the second failed
    *event = *made;
  }
  return std::move(timer);
}

GpuTimer::~GpuTimer() {
  for (GpuEventHandle event : {begin, end})
    if (event)
      driver->destroyEvent(event);
}
