//===- CudaTargets.h - Which fmhajit target and PTX ISA a CUDA GPU takes --===//
//
// Pure rules, testable without a GPU:
//  - the newest PTX ISA an installed driver accepts (a driver rejects PTX
//    newer than itself with CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
//  - the fmhajit target to compile for a GPU of a given compute capability;
//  - whether code for a target can run on that GPU: code for an
//    architecture-specific target (sm_90a, sm_100a) runs only on exactly
//    that capability, code for sm_80/86/89 on that capability or newer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace fmhajit {

/// The newest PTX ISA LLVM 22's NVPTX backend emits (9.0).
inline constexpr unsigned kMaxLlvmPtxVersion = 90;

/// A compute capability, e.g. {9, 0}.
struct ComputeCapability {
  int major = 0, minor = 0;

  int number() const { return major * 10 + minor; }
  std::string str() const; ///< "9.0"
};

/// The newest PTX ISA (e.g. 87 for 8.7) a driver of \p driverVersion (as
/// cuDriverGetVersion reports it: 1000 * major + 10 * minor, 12080 for
/// 12.8) accepts, capped at kMaxLlvmPtxVersion; 0 for drivers older than
/// CUDA 12.0, which the table does not cover (the caller then takes the
/// target's minimum ISA).
unsigned ptxVersionForDriver(int driverVersion);

/// "12.8" for 12080.
std::string driverVersionString(int driverVersion);

/// The fmhajit target for a GPU of capability \p cc: sm_80, sm_86, sm_89,
/// sm_90a (9.0), sm_100a (10.0); another capability of 8.0 or newer takes
/// the newest portable target it can run (8.7 → sm_86, 12.0 → sm_89).
/// Null below 8.0.
std::optional<llvm::StringRef> targetForCapability(ComputeCapability cc);

/// The capability an NVPTX target's code is built for, and whether that
/// code runs only on exactly it (the "a" targets); null if \p target is
/// not an NVPTX target fmhajit knows.
struct TargetCapability {
  ComputeCapability cc;
  bool exact = false;
};
std::optional<TargetCapability> capabilityOfTarget(llvm::StringRef target);

/// Whether code for \p target runs on a GPU of capability \p cc.
bool targetRunsOn(llvm::StringRef target, ComputeCapability cc);

} // namespace fmhajit
