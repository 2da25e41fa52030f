//===- CudaResources.h - Owners of device memory, streams and events ------===//
//
// Move-only RAII owners of driver objects, so that every path out of a run,
// error paths included, gives them back. Each is made by a static create()
// that reports the driver's error; destructors ignore errors (there is no
// one to tell, and the process is usually ending).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/CudaDriver.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <cstddef>
#include <string>

namespace fmhajit {

/// Device memory from cuMemAlloc, freed with cuMemFree.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// \p bytes of device memory (none for 0); \p what names the buffer in
  /// the error ("q", "lse", ...), which also says how much memory is free.
  static llvm::Expected<DeviceBuffer> create(CudaDriver &driver, size_t bytes,
                                             llvm::StringRef what);
  /// A buffer holding a copy of \p bytes host bytes at \p data.
  static llvm::Expected<DeviceBuffer> upload(CudaDriver &driver, const void *data,
                                             size_t bytes, llvm::StringRef what);
  DeviceBuffer(DeviceBuffer &&other) { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other);
  ~DeviceBuffer() { reset(); }

  cuda::CUdeviceptr address() const { return ptr; }
  /// The address as a kernel pointer argument (null when empty).
  void *pointer() const { return reinterpret_cast<void *>(ptr); }
  size_t size() const { return bytes; }

  llvm::Error copyFrom(const void *data, size_t count);
  llvm::Error copyTo(void *data, size_t count) const;
  /// Fills every element of \p type with a quiet NaN, so that elements a
  /// kernel never writes fail the check.
  llvm::Error poison(DType type);

private:
  void reset();
  CudaDriver *driver = nullptr;
  cuda::CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

/// A non-blocking stream from cuStreamCreate.
class CudaStream {
public:
  static llvm::Expected<CudaStream> create(CudaDriver &driver);
  CudaStream(CudaStream &&other) : driver(other.driver), stream(other.stream) {
    other.stream = nullptr;
  }
  CudaStream &operator=(CudaStream &&) = delete;
  ~CudaStream();

  cuda::CUstream get() const { return stream; }
  llvm::Error synchronize() const;

private:
  CudaStream(CudaDriver &driver, cuda::CUstream stream)
      : driver(&driver), stream(stream) {}
  CudaDriver *driver;
  cuda::CUstream stream;
};

/// A pair of timing events around work on a stream.
class CudaTimer {
public:
  static llvm::Expected<CudaTimer> create(CudaDriver &driver);
  CudaTimer(CudaTimer &&other)
      : driver(other.driver), begin(other.begin), end(other.end) {
    other.begin = other.end = nullptr;
  }
  CudaTimer &operator=(CudaTimer &&) = delete;
  ~CudaTimer();

  llvm::Error start(cuda::CUstream stream);
  llvm::Error stop(cuda::CUstream stream);
  /// Waits for the stop event; milliseconds between the two records.
  llvm::Expected<float> elapsedMs();

private:
  explicit CudaTimer(CudaDriver &driver) : driver(&driver) {}
  CudaDriver *driver;
  cuda::CUevent begin = nullptr, end = nullptr;
};

} // namespace fmhajit
