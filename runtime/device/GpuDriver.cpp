//===- GpuDriver.cpp - The one interface to a GPU driver ------------------===//
#include "runtime/device/GpuDriver.h"
#include "runtime/device/CudaDriver.h"
#include "runtime/device/HipRuntime.h"
#include "specs/Errors.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

GpuDriver::~GpuDriver() = default;

static llvm::Error noTensorMaps() {
  return makeError(ErrorKind::Unsupported,
                   "TMA tensor maps (pipeline=wgmma, stages>=2) need an NVIDIA "
                   "GPU of sm_90 or newer");
}

llvm::Error GpuDriver::encodeTensorMap(const TensorMapRequest &, void *) {
  return noTensorMaps();
}

llvm::Error GpuDriver::replaceTensorMapAddress(void *, const void *) {
  return noTensorMaps();
}

llvm::Expected<std::string> GpuDriver::readGlobal(GpuModuleHandle,
                                                  llvm::StringRef name) {
  return makeError(ErrorKind::Unsupported,
                   "reading a module's global (" + name +
                       ") is CUDA only: FMHAJIT_TIMELINE needs an NVIDIA GPU");
}

llvm::Expected<GpuDriver &> fmhajit::gpuDriverFor(Backend backend) {
  switch (backend) {
  case Backend::Nvptx: {
    auto driver = CudaDriver::get();
    if (!driver)
      return driver.takeError();
    return static_cast<GpuDriver &>(*driver);
  }
  case Backend::Amdgpu: {
    auto hip = HipRuntime::get();
    if (!hip)
      return hip.takeError();
    return static_cast<GpuDriver &>(*hip);
  }
  case Backend::Host:
    break;
  }
  return makeError(ErrorKind::Usage, "host code runs on no GPU driver");
}

std::string fmhajit::mebibytes(size_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::format("%.1f MiB", double(bytes) / (1 << 20));
  return text;
}
