//===- WgmmaLayout.h - pipeline=wgmma: sm_90a warpgroup tiles (no emitter)
//-===//
//
// sm_90a's table offers wgmma, and specs and names take it, but no emitter
// exists yet: emitKernelModule refuses it as not implemented. Its rules are
// the hardware's (wgmma is issued by warpgroups of four warps) and its
// footprint is the planned one, unpadded tiles as TMA writes them: Q [bm][d]
// and `stages` buffers of K [bn][d] and V [bn][dv] in the input dtype.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/TileRules.h"

namespace fmhajit {

class WgmmaLayout {
public:
  static constexpr unsigned kWarpsPerGroup = 4;

  WgmmaLayout(const KernelSpec &spec, const ArchInfo &arch)
      : spec(spec), arch(arch) {}

  unsigned bytes() const;
  /// Stages in range; warps whole warpgroups.
  void check(ErrorList &errors) const;

private:
  const KernelSpec &spec;
  const ArchInfo &arch;
};

} // namespace fmhajit
