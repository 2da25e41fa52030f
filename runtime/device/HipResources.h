//===- HipResources.h - Owners of HIP device memory, streams and events ---===//
//
// Move-only RAII owners of HIP objects, the twins of CudaResources.h with
// the same interface (so DeviceForwardData and the run loop serve both):
// every path out of a run, error paths included, gives them back. Each is
// made by a static create() that reports HIP's error; destructors ignore
// errors.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/HipRuntime.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <cstddef>

namespace fmhajit {

/// Device memory from hipMalloc, freed with hipFree.
class HipBuffer {
public:
  HipBuffer() = default;
  /// \p bytes of device memory (none for 0); \p what names the buffer in
  /// the error, which also says how much memory is free.
  static llvm::Expected<HipBuffer> create(HipRuntime &hip, size_t bytes, llvm::StringRef what);
  /// A buffer holding a copy of \p bytes host bytes at \p data.
  static llvm::Expected<HipBuffer> upload(HipRuntime &hip, const void *data, size_t bytes,
                                          llvm::StringRef what);
  HipBuffer(HipBuffer &&other) { *this = std::move(other); }
  HipBuffer &operator=(HipBuffer &&other);
  ~HipBuffer() { reset(); }

  /// The address as a kernel pointer argument (null when empty).
  void *pointer() const { return ptr; }
  size_t size() const { return bytes; }

  llvm::Error copyFrom(const void *data, size_t count);
  llvm::Error copyTo(void *data, size_t count) const;
  /// Fills every element of \p type with a quiet NaN, so that elements a
  /// kernel never writes fail the check.
  llvm::Error poison(DType type);

private:
  void reset();
  HipRuntime *hip = nullptr;
  void *ptr = nullptr;
  size_t bytes = 0;
};

/// A non-blocking stream from hipStreamCreateWithFlags.
class HipStream {
public:
  static llvm::Expected<HipStream> create(HipRuntime &hip);
  HipStream(HipStream &&other) : hip(other.hip), stream(other.stream) { other.stream = nullptr; }
  HipStream &operator=(HipStream &&) = delete;
  ~HipStream();

  hip::hipStream_t get() const { return stream; }
  llvm::Error synchronize() const;

private:
  HipStream(HipRuntime &hip, hip::hipStream_t stream) : hip(&hip), stream(stream) {}
  HipRuntime *hip;
  hip::hipStream_t stream;
};

/// A pair of timing events around work on a stream.
class HipTimer {
public:
  static llvm::Expected<HipTimer> create(HipRuntime &hip);
  HipTimer(HipTimer &&other) : hip(other.hip), begin(other.begin), end(other.end) {
    other.begin = other.end = nullptr;
  }
  HipTimer &operator=(HipTimer &&) = delete;
  ~HipTimer();

  llvm::Error start(hip::hipStream_t stream);
  llvm::Error stop(hip::hipStream_t stream);
  /// Waits for the stop event; milliseconds between the two records.
  llvm::Expected<float> elapsedMs();

private:
  explicit HipTimer(HipRuntime &hip) : hip(&hip) {}
  HipRuntime *hip;
  hip::hipEvent_t begin = nullptr, end = nullptr;
};

} // namespace fmhajit
