//===- DeviceReport.cpp - The device a plan runs on -----------------------===//
#include "runtime/harness/DeviceReport.h"
#include "runtime/device/GpuDriver.h"
#include "specs/Errors.h"

using namespace fmhajit;

llvm::Expected<std::string> harness::describeDevice(api::Device device) {
  if (device == api::Device::Host)
    return makeError(ErrorKind::Unsupported, "the host is not a GPU");
  auto driver = gpuDriverFor(device == api::Device::Cuda ? Backend::Nvptx
                                                         : Backend::Amdgpu);
  if (!driver)
    return driver.takeError();
  return driver->describe();
}

Backend harness::backendOf(const api::Plan &plan) {
  return findArch(plan.target())->backend;
}
