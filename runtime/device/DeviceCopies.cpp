//===- DeviceCopies.cpp - Device twins of host buffers, made in a row -----===//
#include "runtime/device/DeviceCopies.h"

using namespace fmhajit;

DeviceCopies::DeviceCopies(Backend backend) {
  auto d = gpuDriverFor(backend);
  if (d)
    driver = &*d;
  else
    firstError = llvm::toString(d.takeError());
}

void *DeviceCopies::make(const void *data, size_t bytes, const char *what) {
  if (!driver || !bytes)
    return nullptr;
  auto buffer = data ? GpuBuffer::upload(*driver, data, bytes, what)
                     : GpuBuffer::create(*driver, bytes, what);
  if (!buffer) {
    std::string text = llvm::toString(buffer.takeError());
    if (firstError.empty())
      firstError = text;
    return nullptr;
  }
  buffers.push_back(std::move(*buffer));
  return buffers.back().pointer();
}

void DeviceCopies::keep(llvm::Error err) {
  if (err && firstError.empty())
    firstError = llvm::toString(std::move(err));
  else
    llvm::consumeError(std::move(err));
}

// Whole words: a trailing 1-3 bytes keep what they held.
void *DeviceCopies::makePoisoned(size_t bytes, const char *what) {
  void *p = make(nullptr, bytes, what);
  if (p)
    keep(buffers.back().poison(DType::F32));
  return p;
}

void DeviceCopies::refill(void *device, const void *host, size_t bytes) {
  for (GpuBuffer &b : buffers)
    if (b.pointer() == device) {
      keep(b.copyFrom(host, bytes));
      return;
    }
  if (bytes && firstError.empty())
    firstError = "refill of a pointer DeviceCopies did not make";
}

void DeviceCopies::download(const void *device, void *host, size_t bytes) {
  for (const GpuBuffer &b : buffers)
    if (b.pointer() == device) {
      keep(b.copyTo(host, bytes));
      return;
    }
  if (bytes && firstError.empty())
    firstError = "download from a pointer DeviceCopies did not make";
}
