//===- HipResources.cpp - Owners of HIP device memory, streams and events -===//
#include "runtime/device/HipResources.h"
#include "specs/Errors.h"
#include "llvm/Support/Format.h"

using namespace fmhajit;
using namespace fmhajit::hip;

static std::string mebibytes(size_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.1f MiB", double(bytes) / (1 << 20));
  return text;
}

llvm::Expected<HipBuffer> HipBuffer::create(HipRuntime &hip, size_t bytes, llvm::StringRef what) {
  HipBuffer buffer;
  buffer.hip = &hip;
  if (bytes == 0)
    return std::move(buffer);
  void *ptr = nullptr;
  hipError_t result = hip.api().malloc(&ptr, bytes);
  if (result != kSuccess) {
    size_t free = 0, total = 0;
    std::string room;
    if (hip.api().memGetInfo(&free, &total) == kSuccess)
      room = " (" + mebibytes(free) + " of " + mebibytes(total) + " free)";
    return makeError(ErrorKind::Driver,
                     "cannot allocate " + mebibytes(bytes) + " for " + what + " on the GPU" +
                         room + ": " + llvm::toString(hip.check(result, "hipMalloc")) +
                         "; use a smaller batch, fewer heads or shorter sequences");
  }
  buffer.ptr = ptr;
  buffer.bytes = bytes;
  return std::move(buffer);
}

llvm::Expected<HipBuffer> HipBuffer::upload(HipRuntime &hip, const void *data, size_t bytes,
                                            llvm::StringRef what) {
  auto buffer = create(hip, bytes, what);
  if (!buffer)
    return buffer.takeError();
  if (llvm::Error err = buffer->copyFrom(data, bytes))
    return std::move(err);
  return buffer;
}

HipBuffer &HipBuffer::operator=(HipBuffer &&other) {
  if (this != &other) {
    reset();
    hip = other.hip;
    ptr = other.ptr;
    bytes = other.bytes;
    other.ptr = nullptr;
    other.bytes = 0;
  }
  return *this;
}

void HipBuffer::reset() {
  if (ptr)
    (void)hip->api().free(ptr);
  ptr = nullptr;
  bytes = 0;
}

llvm::Error HipBuffer::copyFrom(const void *data, size_t count) {
  assert(count <= bytes && "copy past the end of a device buffer");
  if (count == 0)
    return llvm::Error::success();
  return hip->check(hip->api().memcpy(ptr, data, count, kMemcpyHostToDevice), "hipMemcpy");
}

llvm::Error HipBuffer::copyTo(void *data, size_t count) const {
  assert(count <= bytes && "copy past the end of a device buffer");
  if (count == 0)
    return llvm::Error::success();
  return hip->check(hip->api().memcpy(data, ptr, count, kMemcpyDeviceToHost), "hipMemcpy");
}

// Quiet NaNs: fp32 0x7FC00000, fp16 0x7E00, bf16 0x7FC0.
llvm::Error HipBuffer::poison(DType type) {
  if (bytes == 0)
    return llvm::Error::success();
  switch (type) {
  case DType::F32:
    return hip->check(hip->api().memsetD32(ptr, 0x7FC00000, bytes / 4), "hipMemsetD32");
  case DType::F16:
    return hip->check(hip->api().memsetD16(ptr, 0x7E00, bytes / 2), "hipMemsetD16");
  case DType::BF16:
    return hip->check(hip->api().memsetD16(ptr, 0x7FC0, bytes / 2), "hipMemsetD16");
  case DType::F8E4M3:
  case DType::F8E5M2:
    break;
  }
  return makeError(ErrorKind::Unsupported, "cannot poison fp8 outputs");
}

llvm::Expected<HipStream> HipStream::create(HipRuntime &hip) {
  hipStream_t stream = nullptr;
  if (llvm::Error err = hip.check(hip.api().streamCreateWithFlags(&stream, kStreamNonBlocking),
                                  "hipStreamCreateWithFlags"))
    return std::move(err);
  return HipStream(hip, stream);
}

HipStream::~HipStream() {
  if (stream)
    (void)hip->api().streamDestroy(stream);
}

llvm::Error HipStream::synchronize() const {
  return hip->check(hip->api().streamSynchronize(stream), "hipStreamSynchronize");
}

llvm::Expected<HipTimer> HipTimer::create(HipRuntime &hip) {
  HipTimer timer(hip);
  for (hipEvent_t *event : {&timer.begin, &timer.end})
    if (llvm::Error err = hip.check(hip.api().eventCreate(event), "hipEventCreate"))
      return std::move(err); // the destructor frees the first if the second failed
  return std::move(timer);
}

HipTimer::~HipTimer() {
  for (hipEvent_t event : {begin, end})
    if (event)
      (void)hip->api().eventDestroy(event);
}

llvm::Error HipTimer::start(hipStream_t stream) {
  return hip->check(hip->api().eventRecord(begin, stream), "hipEventRecord");
}

llvm::Error HipTimer::stop(hipStream_t stream) {
  return hip->check(hip->api().eventRecord(end, stream), "hipEventRecord");
}

llvm::Expected<float> HipTimer::elapsedMs() {
  if (llvm::Error err = hip->check(hip->api().eventSynchronize(end), "hipEventSynchronize"))
    return std::move(err);
  float ms = 0;
  if (llvm::Error err =
          hip->check(hip->api().eventElapsedTime(&ms, begin, end), "hipEventElapsedTime"))
    return std::move(err);
  return ms;
}
