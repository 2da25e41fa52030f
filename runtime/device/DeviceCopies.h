//===- DeviceCopies.h - Device twins of host buffers, made in a row -------===//
//
// A GPU run through the public API takes device pointers for everything
// (inputs, outputs, tables, lengths, workspace). DeviceCopies uploads host
// buffers, allocates the rest, and keeps the first failure as text, so a
// caller (a test, a benchmark) makes its copies in a row and checks
// error() once. The buffers live as long as the DeviceCopies. It works on
// the GPU of either driver (gpuDriverFor).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/GpuResources.h"
#include <cstddef>
#include <string>
#include <vector>

namespace fmhajit {

class DeviceCopies {
public:
  /// Copies on the GPU that runs \p backend's code (Nvptx: CUDA, Amdgpu:
  /// HIP); without its driver every step fails with the driver's error.
  explicit DeviceCopies(Backend backend);

  /// A device copy of \p bytes at \p data; null for 0 bytes or on failure.
  template <typename T = void>
  T *upload(const void *data, size_t bytes, const char *what) {
    return static_cast<T *>(make(data, bytes, what));
  }
  /// \p bytes of device memory, contents unspecified; null for 0 bytes.
  template <typename T = void> T *allocate(size_t bytes, const char *what) {
    return static_cast<T *>(make(nullptr, bytes, what));
  }
  /// \p bytes of device memory filled with fp32 NaNs (GpuBuffer::poison):
  /// what a kernel reads before anything wrote it shows.
  template <typename T = void> T *poisoned(size_t bytes, const char *what) {
    return static_cast<T *>(makePoisoned(bytes, what));
  }
  /// Copies \p bytes from \p device (one of ours) into \p host; a failure
  /// joins error().
  void download(const void *device, void *host, size_t bytes);
  /// Copies \p bytes from \p host into \p device (one of ours), as
  /// download() the other way.
  void refill(void *device, const void *host, size_t bytes);

  /// Empty while every step has succeeded.
  const std::string &error() const { return firstError; }

private:
  void *make(const void *data, size_t bytes, const char *what);
  void *makePoisoned(size_t bytes, const char *what);
  /// Keeps \p err as error() if it is the first failure.
  void keep(llvm::Error err);

  GpuDriver *driver = nullptr;
  std::vector<GpuBuffer> buffers;
  std::string firstError;
};

} // namespace fmhajit
