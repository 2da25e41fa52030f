//===- DeviceReport.cpp - The GPU a run lands on, in one line -------------===//
#include "runtime/harness/DeviceReport.h"
#include "runtime/device/CudaDriver.h"
#include "specs/Errors.h"

using namespace fmhajit;

llvm::Expected<std::string> harness::describeDevice(api::Device device) {
  if (device == api::Device::Cuda) {
    auto driver = CudaDriver::get();
    if (!driver)
      return driver.takeError();
    return driver->describe();
  }
  return makeError(ErrorKind::Unsupported, "describing this device is not built yet");
}
