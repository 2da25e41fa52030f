//===- GpuResources.h - Owners of device memory, streams and events -------===//
//
// Move-only RAII owners of driver objects, over any GpuDriver, so that
// every path out of a run, error paths included, gives them back. Each is
// made by a static create() that reports the driver's error; destructors
// ignore errors (there is no one to tell, and the process is usually
// ending). timedLaunch() is how CUDA and HIP time GPU work.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/GpuDriver.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <cstddef>

namespace fmhajit {

/// Device memory from GpuDriver::allocate, given back with release.
class GpuBuffer {
public:
  GpuBuffer() = default;
  /// \p bytes of device memory (none for 0); \p what names the buffer in
  /// the error ("q", "lse", ...), which also says how much memory is free.
  static llvm::Expected<GpuBuffer> create(GpuDriver &driver, size_t bytes,
                                          llvm::StringRef what);
  /// A buffer holding a copy of \p bytes host bytes at \p data.
  static llvm::Expected<GpuBuffer> upload(GpuDriver &driver, const void *data,
                                          size_t bytes, llvm::StringRef what);
  GpuBuffer(GpuBuffer &&other) { *this = std::move(other); }
  GpuBuffer &operator=(GpuBuffer &&other);
  ~GpuBuffer() { reset(); }

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
  GpuDriver *driver = nullptr;
  void *ptr = nullptr;
  size_t bytes = 0;
};

/// A stream that does not wait on the default one.
class GpuStream {
public:
  static llvm::Expected<GpuStream> create(GpuDriver &driver);
  GpuStream(GpuStream &&other) : driver(other.driver), stream(other.stream) {
    other.stream = nullptr;
  }
  GpuStream &operator=(GpuStream &&) = delete;
  ~GpuStream();

  GpuStreamHandle get() const { return stream; }
  llvm::Error synchronize() const { return driver->synchronize(stream); }

private:
  GpuStream(GpuDriver &driver, GpuStreamHandle stream)
      : driver(&driver), stream(stream) {}
  GpuDriver *driver;
  GpuStreamHandle stream;
};

/// A pair of timing events around work on a stream.
class GpuTimer {
public:
  static llvm::Expected<GpuTimer> create(GpuDriver &driver);
  GpuTimer(GpuTimer &&other)
      : driver(other.driver), begin(other.begin), end(other.end) {
    other.begin = other.end = nullptr;
  }
  GpuTimer &operator=(GpuTimer &&) = delete;
  ~GpuTimer();

  llvm::Error start(GpuStreamHandle stream) {
    return driver->record(begin, stream);
  }
  llvm::Error stop(GpuStreamHandle stream) {
    return driver->record(end, stream);
  }
  /// Waits for the stop event; milliseconds between the two records.
  llvm::Expected<float> elapsedMs() { return driver->elapsedMs(begin, end); }

private:
  explicit GpuTimer(GpuDriver &driver) : driver(&driver) {}
  GpuDriver *driver;
  GpuEventHandle begin = nullptr, end = nullptr;
};

/// Runs \p launch (returning llvm::Error) between \p timer's events on
/// \p stream and waits: its milliseconds.
template <typename Launch>
llvm::Expected<float> timedLaunch(GpuTimer &timer, GpuStreamHandle stream,
                                  Launch launch) {
  if (llvm::Error err = timer.start(stream))
    return std::move(err);
  if (llvm::Error err = launch())
    return std::move(err);
  if (llvm::Error err = timer.stop(stream))
    return std::move(err);
  return timer.elapsedMs();
}

} // namespace fmhajit
