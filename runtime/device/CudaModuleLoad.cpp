//===- CudaModuleLoad.cpp - PTX loaded into the CUDA driver ---------------===//
//
// cuModuleLoadDataEx JIT-compiles PTX to the GPU's machine code (SASS). Its
// error log is the only place that says why PTX was rejected (an ISA newer
// than the driver, a feature the GPU lacks, too many registers), so a
// failed load returns it in the error, and a successful one keeps the info
// log (registers, spills) for whoever wants to print it.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/CudaDriver.h"
#include "specs/Errors.h"
#include <algorithm>
#include <cstdint>
#include <cstring>

using namespace fmhajit;
using namespace fmhajit::cuda;

/// Bytes of each JIT log buffer; ptxas messages are short.
static constexpr size_t kLogBytes = 16 * 1024;

// The size options are in/out: on return they hold the bytes written.
static std::string logText(const std::string &buffer, void *size) {
  size_t used =
      std::min(reinterpret_cast<uintptr_t>(size), uintptr_t(buffer.size()));
  std::string text = buffer.substr(0, strnlen(buffer.data(), used));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0'))
    text.pop_back();
  return text;
}

llvm::Expected<GpuLoadedImage> CudaDriver::loadModule(const std::string &ptx,
                                                      const ArchInfo &) {
  std::string infoLog(kLogBytes, '\0'), errorLog(kLogBytes, '\0');
  int options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes,
                   kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes,
                   kJitLogVerbose};
  void *values[] = {
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      reinterpret_cast<void *>(uintptr_t(1))};
  CUmodule module = nullptr;
  CUresult result = fns.moduleLoadDataEx(&module, ptx.c_str(),
                                         std::size(options), options, values);
  if (result != kSuccess) {
    std::string log = logText(errorLog, values[3]);
    return makeError(
        ErrorKind::Driver,
        llvm::toString(check(result, "cuModuleLoadDataEx (PTX JIT)")) +
            (log.empty() ? std::string("; the driver gave no log")
                         : "; driver log:\n" + log));
  }
  return GpuLoadedImage{module, logText(infoLog, values[1])};
}

llvm::Expected<std::string> CudaDriver::readGlobal(GpuModuleHandle module,
                                                   llvm::StringRef name) {
  CUdeviceptr address = 0;
  size_t bytes = 0;
  std::string symbol = name.str();
  if (llvm::Error err = check(fns.moduleGetGlobal(&address, &bytes,
                                                  static_cast<CUmodule>(module),
                                                  symbol.c_str()),
                              "cuModuleGetGlobal(" + symbol + ")"))
    return std::move(err);
  std::string out(bytes, '\0');
  if (llvm::Error err =
          check(fns.memcpyDtoH(out.data(), address, bytes), "cuMemcpyDtoH"))
    return std::move(err);
  return out;
}

void CudaDriver::unloadModule(GpuModuleHandle module) {
  (void)fns.moduleUnload(static_cast<CUmodule>(module));
}

llvm::Expected<GpuFunctionHandle> CudaDriver::function(GpuModuleHandle module,
                                                       llvm::StringRef name) {
  CUfunction fn = nullptr;
  std::string symbol = name.str();
  if (fns.moduleGetFunction(&fn, static_cast<CUmodule>(module),
                            symbol.c_str()) != kSuccess)
    return makeError(ErrorKind::Jit,
                     "the PTX has no kernel named " + name +
                         " (the artifact does not match its spec)");
  return fn;
}
