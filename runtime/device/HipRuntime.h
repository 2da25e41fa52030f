//===- HipRuntime.h - The HIP runtime, loaded at run time -----------------===//
//
// fmhajit needs no ROCm to build: HipRuntime dlopens libamdhip64.so (then
// .so.7, .so.6) when a kernel first runs on an AMD GPU, binds the entry
// points of HipApi.h, initializes HIP and describes device 0 (pick another
// with HIP_VISIBLE_DEVICES). A machine without HIP gets one
// ErrorKind::Driver error, never a crash.
//
// Every HIP call goes through check(), which turns a failing hipError_t
// into an ErrorKind::Driver error naming the call and HIP's
// hipGetErrorName / hipGetErrorString.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/HipApi.h"
#include "runtime/device/SharedLibrary.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace fmhajit {

/// What fmhajit needs to know about the AMD GPU it runs on.
struct HipDeviceInfo {
  int ordinal = 0;
  std::string name;       ///< as hipDeviceGetName reports it
  size_t totalMemory = 0; ///< bytes of device memory
};

class HipRuntime {
public:
  /// The libraries get() tries, in order.
  static constexpr const char *kLibraryNames[] = {"libamdhip64.so", "libamdhip64.so.7",
                                                  "libamdhip64.so.6"};

  /// The process-wide runtime, loaded and initialized on first use (a
  /// failure is remembered and returned again).
  static llvm::Expected<HipRuntime &> get();

  /// Loads HIP from the first of \p libraries that opens and initializes
  /// it, independently of get(); tests use it with libraries that do not
  /// exist.
  static llvm::Expected<std::unique_ptr<HipRuntime>>
  load(llvm::ArrayRef<const char *> libraries);

  HipRuntime(const HipRuntime &) = delete;
  HipRuntime &operator=(const HipRuntime &) = delete;

  /// The bound entry points. Call them through check().
  const hip::RuntimeApi &api() const { return fns; }

  /// Success when \p result is hipSuccess, else an ErrorKind::Driver error:
  /// "<call> failed: hipErrorX (HIP's description)".
  llvm::Error check(hip::hipError_t result, llvm::StringRef call) const;

  const HipDeviceInfo &device() const { return info; }
  /// As hipRuntimeGetVersion reports it.
  int runtimeVersion() const { return version; }
  /// One line: "AMD Instinct MI300X (192 GiB), HIP 6.2.41133 (libamdhip64.so)".
  std::string describe() const;

private:
  explicit HipRuntime(SharedLibrary library) : library(std::move(library)) {}
  llvm::Error bind();
  llvm::Error initialize();

  SharedLibrary library;
  hip::RuntimeApi fns{};
  int version = 0;
  HipDeviceInfo info;
};

} // namespace fmhajit
