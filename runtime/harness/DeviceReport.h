//===- DeviceReport.h - The device a plan runs on -------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "specs/ArchTable.h"
#include "llvm/Support/Error.h"
#include <string>

namespace fmhajit::harness {

/// The backend whose code \p plan runs (its target's).
Backend backendOf(const api::Plan &plan);

/// "NVIDIA H100 80GB HBM3 (sm_90a, cc 9.0, 132 SMs, 79 GiB), driver 13.0,
/// PTX 9.0": what the driver says of the GPU that runs \p device's plans.
/// An error when the device has no driver here.
llvm::Expected<std::string> describeDevice(api::Device device);

} // namespace fmhajit::harness
