//===- CudaModule.cpp - PTX loaded into the driver ------------------------===//
#include "runtime/device/CudaModule.h"
#include "specs/Errors.h"
#include <chrono>
#include <cstdint>
#include <cstring>

using namespace fmhajit;
using namespace fmhajit::cuda;

/// Bytes of each JIT log buffer; ptxas messages are short.
static constexpr size_t kLogBytes = 16 * 1024;

// The size options are in/out: on return they hold the bytes written.
static std::string logText(const std::string &buffer, void *size) {
  size_t used = std::min(reinterpret_cast<uintptr_t>(size), uintptr_t(buffer.size()));
  std::string text = buffer.substr(0, strnlen(buffer.data(), used));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0'))
    text.pop_back();
  return text;
}

llvm::Expected<std::unique_ptr<CudaModule>> CudaModule::load(CudaDriver &driver,
                                                             llvm::StringRef ptx) {
  std::string image = ptx.str(); // cuModuleLoadDataEx reads PTX up to a NUL
  std::string infoLog(kLogBytes, '\0'), errorLog(kLogBytes, '\0');
  int options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes, kJitErrorLogBuffer,
                   kJitErrorLogBufferSizeBytes, kJitLogVerbose};
  void *values[] = {infoLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
                    errorLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
                    reinterpret_cast<void *>(uintptr_t(1))};
  CUmodule module = nullptr;
  auto start = std::chrono::steady_clock::now();
  CUresult result = driver.api().moduleLoadDataEx(&module, image.c_str(), std::size(options),
                                                  options, values);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                        start)
                  .count();
  if (result != kSuccess) {
    std::string log = logText(errorLog, values[3]);
    return makeError(ErrorKind::Driver,
                     llvm::toString(driver.check(result, "cuModuleLoadDataEx (PTX JIT)")) +
                         (log.empty() ? std::string("; the driver gave no log")
                                      : "; driver log:\n" + log));
  }
  std::unique_ptr<CudaModule> loaded(new CudaModule(driver, module));
  loaded->info = logText(infoLog, values[1]);
  loaded->ms = ms;
  return std::move(loaded);
}

CudaModule::~CudaModule() { (void)driver.api().moduleUnload(module); }

llvm::Expected<CUfunction> CudaModule::function(llvm::StringRef name) const {
  CUfunction fn = nullptr;
  std::string symbol = name.str();
  if (driver.api().moduleGetFunction(&fn, module, symbol.c_str()) != kSuccess)
    return makeError(ErrorKind::Jit, "the PTX has no kernel named " + name +
                                         " (the artifact does not match its spec)");
  return fn;
}
