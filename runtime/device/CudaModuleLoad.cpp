//===- CudaModuleLoad.cpp - PTX loaded into the CUDA driver ---------------===//
//
// cuModuleLoadDataEx JIT-compiles PTX to the GPU's machine code (SASS). Its
// error log is the only place that says why PTX was rejected (an ISA newer
// than the driver, a feature the GPU lacks, too many registers), so a
// failed load returns it in the error, and a successful one keeps the info
// log (registers, spills) for whoever wants to print it.
//
// The JIT step costs 0.3-0.9 s a kernel on the H100, again in every process
// unless the driver's own compute cache holds the result (it may be off,
// full or shared). So the driver also hands out the cubin it compiles
// (cuLink*: the same JIT, with the same options), which fmhajit's cache
// keeps beside the PTX (GpuKernel.cpp); cuModuleLoadDataEx then loads that
// machine code in about a millisecond.
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

llvm::Expected<GpuLoadedImage> CudaDriver::loadModule(llvm::StringRef ptx,
                                                      const ArchInfo &) {
  std::string image = ptx.str(); // cuModuleLoadDataEx reads PTX up to a NUL
  std::string infoLog(kLogBytes, '\0'), errorLog(kLogBytes, '\0');
  int options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes,
                   kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes,
                   kJitLogVerbose};
  void *values[] = {
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      reinterpret_cast<void *>(uintptr_t(1))};
  CUmodule module = nullptr;
  CUresult result = fns.moduleLoadDataEx(&module, image.c_str(),
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

// A cubin holds machine code for one GPU family, made by one version of
// the driver's JIT.
std::string CudaDriver::nativeImageKey() const {
  if (!fns.linkCreate || !fns.linkAddData || !fns.linkComplete ||
      !fns.linkDestroy)
    return {};
  return "cuda-driver " + std::to_string(version) + ", " +
         info.target.value_or("unknown target") + ", " + info.name;
}

llvm::Expected<GpuNativeImage>
CudaDriver::compileNativeImage(llvm::StringRef ptx) {
  std::string infoLog(kLogBytes, '\0'), errorLog(kLogBytes, '\0');
  int options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes,
                   kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes,
                   kJitLogVerbose};
  void *values[] = {
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      reinterpret_cast<void *>(uintptr_t(1))};
  CUlinkState state = nullptr;
  if (llvm::Error err =
          check(fns.linkCreate(std::size(options), options, values, &state),
                "cuLinkCreate"))
    return std::move(err);
  std::string image = ptx.str(); // with its NUL
  void *cubin = nullptr;
  size_t bytes = 0;
  CUresult result =
      fns.linkAddData(state, kJitInputPtx, image.data(), image.size() + 1,
                      "kernel.ptx", 0, nullptr, nullptr);
  const char *call = "cuLinkAddData (PTX JIT)";
  if (result == kSuccess) {
    result = fns.linkComplete(state, &cubin, &bytes);
    call = "cuLinkComplete";
  }
  // The cubin lives in the link state: copy it before destroying that.
  GpuNativeImage native;
  if (result == kSuccess)
    native = {std::string(static_cast<const char *>(cubin), bytes),
              logText(infoLog, values[1])};
  std::string log = logText(errorLog, values[3]);
  (void)fns.linkDestroy(state);
  if (result != kSuccess)
    return makeError(ErrorKind::Driver,
                     llvm::toString(check(result, call)) +
                         (log.empty() ? std::string("; the driver gave no log")
                                      : "; driver log:\n" + log));
  return std::move(native);
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
