//===- CudaTargets.cpp - Which fmhajit target and PTX ISA a CUDA GPU takes ===//
#include "runtime/device/CudaTargets.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>

using namespace fmhajit;

std::string ComputeCapability::str() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {
struct DriverPtx {
  int driverVersion; ///< the first driver of the row (cuDriverGetVersion)
  unsigned ptx;      ///< the newest PTX ISA it accepts
};
} // namespace

// From the PTX ISA release notes ("PTX ISA Version x.y" / "CUDA 12.z"),
// newest first. 12.7 was never released but is where ISA 8.6 belongs.
static const DriverPtx kDriverPtx[] = {
    {13000, 90}, {12090, 88}, {12080, 87}, {12070, 86}, {12050, 85},
    {12040, 84}, {12030, 83}, {12020, 82}, {12010, 81}, {12000, 80},
};

unsigned fmhajit::ptxVersionForDriver(int driverVersion) {
  for (const DriverPtx &row : kDriverPtx)
    if (driverVersion >= row.driverVersion)
      return std::min(row.ptx, kMaxLlvmPtxVersion);
  return 0;
}

std::string fmhajit::driverVersionString(int driverVersion) {
  return std::to_string(driverVersion / 1000) + "." +
         std::to_string(driverVersion % 1000 / 10);
}

namespace {
struct NvptxTarget {
  llvm::StringLiteral name;
  ComputeCapability cc;
  bool exact; ///< architecture-specific ("a") code: only this capability
};
} // namespace

static const NvptxTarget kTargets[] = {
    {"sm_80", {8, 0}, false},   {"sm_86", {8, 6}, false},
    {"sm_89", {8, 9}, false},   {"sm_90a", {9, 0}, true},
    {"sm_100a", {10, 0}, true},
};

std::optional<TargetCapability>
fmhajit::capabilityOfTarget(llvm::StringRef target) {
  for (const NvptxTarget &t : kTargets)
    if (t.name == target)
      return TargetCapability{t.cc, t.exact};
  return std::nullopt;
}

bool fmhajit::targetRunsOn(llvm::StringRef target, ComputeCapability cc) {
  std::optional<TargetCapability> need = capabilityOfTarget(target);
  if (!need)
    return false;
  if (need->exact)
    return need->cc.number() == cc.number();
  return need->cc.number() <= cc.number();
}

// The exact match first (it may be an "a" target with the newest
// instructions); otherwise the newest portable target the GPU can run.
std::optional<llvm::StringRef>
fmhajit::targetForCapability(ComputeCapability cc) {
  for (const NvptxTarget &t : kTargets)
    if (t.cc.number() == cc.number())
      return llvm::StringRef(t.name);
  std::optional<llvm::StringRef> best;
  for (const NvptxTarget &t : kTargets)
    if (!t.exact && t.cc.number() <= cc.number())
      best = llvm::StringRef(t.name);
  return best;
}
