//===- CudaModule.h - PTX loaded into the driver --------------------------===//
//
// cuModuleLoadDataEx JIT-compiles PTX to the GPU's machine code (SASS). Its
// error log is the only place that says why PTX was rejected (an ISA newer
// than the driver, a feature the GPU lacks, too many registers), so a
// failed load returns it in the error, and a successful one keeps the info
// log (registers, spills) for whoever wants to print it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/CudaDriver.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace fmhajit {

class CudaModule {
public:
  /// Loads \p ptx (the text; a NUL is appended here) into the current
  /// context.
  static llvm::Expected<std::unique_ptr<CudaModule>> load(CudaDriver &driver,
                                                          llvm::StringRef ptx);
  CudaModule(const CudaModule &) = delete;
  CudaModule &operator=(const CudaModule &) = delete;
  ~CudaModule();

  /// The kernel named \p name (an ErrorKind::Jit error if it is missing).
  llvm::Expected<cuda::CUfunction> function(llvm::StringRef name) const;

  /// The driver's JIT info log of the load (may be empty).
  const std::string &infoLog() const { return info; }
  /// Milliseconds the driver spent in cuModuleLoadDataEx (PTX to SASS).
  double loadMs() const { return ms; }

private:
  CudaModule(CudaDriver &driver, cuda::CUmodule module) : driver(driver), module(module) {}
  CudaDriver &driver;
  cuda::CUmodule module;
  std::string info;
  double ms = 0;
};

} // namespace fmhajit
