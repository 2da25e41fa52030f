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

namespace {
/// The JIT options of a load or a link: verbose info and error logs.
struct JitLogs {
  std::string info = std::string(kLogBytes, '\0');
  std::string error = std::string(kLogBytes, '\0');
  int options[5] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes,
                    kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes,
                    kJitLogVerbose};
  void *values[5] = {
      info.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)), error.data(),
      reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      reinterpret_cast<void *>(uintptr_t(1))};
  JitLogs() = default;
  JitLogs(const JitLogs &) = delete; // values point into the buffers

  std::string infoText() const { return logText(info, values[1]); }
  /// \p failure with the driver's error log.
  llvm::Error failed(llvm::Error failure) const {
    std::string log = logText(error, values[3]);
    return makeError(ErrorKind::Driver,
                     llvm::toString(std::move(failure)) +
                         (log.empty() ? std::string("; the driver gave no log")
                                      : "; driver log:\n" + log));
  }
};
} // namespace

llvm::Expected<GpuLoadedImage> CudaDriver::loadModule(llvm::StringRef ptx,
                                                      const ArchInfo &) {
  std::string image = ptx.str(); // cuModuleLoadDataEx reads PTX up to a NUL
  JitLogs logs;
  CUmodule module = nullptr;
  CUresult result =
      fns.moduleLoadDataEx(&module, image.c_str(), std::size(logs.options),
                           logs.options, logs.values);
  if (result != kSuccess)
    return logs.failed(check(result, "cuModuleLoadDataEx (PTX JIT)"));
  return GpuLoadedImage{module, logs.infoText()};
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
  JitLogs logs;
  CUlinkState state = nullptr;
  if (llvm::Error err = check(fns.linkCreate(std::size(logs.options),
                                             logs.options, logs.values, &state),
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
              logs.infoText()};
  (void)fns.linkDestroy(state);
  if (result != kSuccess)
    return logs.failed(check(result, call));
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
