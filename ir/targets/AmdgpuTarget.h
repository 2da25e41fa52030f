//===- AmdgpuTarget.h - AMD GPUs through LLVM's AMDGPU backend ------------===//
//
// The AMDGPU TargetInfo (AmdgpuTarget.cpp) and its matrix tile ops: MFMA on
// CDNA (AmdgpuMfmaTileOps.cpp), WMMA on RDNA3/4 (AmdgpuWmmaTileOps.cpp), both
// built on the shared fragment-in-registers core of AmdgpuMatrixTileOps.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/targets/GpuTarget.h"

namespace fmhajit {

/// The TargetInfo for gfx90a/gfx942/gfx950 (wave64) and gfx1100/gfx1201
/// (wave32), pipelines simt, mfma and wmma.
std::unique_ptr<TargetInfo> createAmdgpuTargetInfo(const KernelSpec &spec,
                                                   const ArchInfo &arch);

/// pipeline=mfma: v_mfma_f32_32x32x8{f16,bf16_1k} (gfx90a, gfx942) or
/// v_mfma_f32_32x32x16_{f16,bf16} (gfx950).
std::unique_ptr<TileOps> createAmdgpuMfmaTileOps(llvm::IRBuilderBase &b,
                                                 GpuTargetInfo &target);

/// pipeline=wmma: v_wmma_f32_16x16x16_{f16,bf16} in the gfx11 or gfx12
/// operand layout.
std::unique_ptr<TileOps> createAmdgpuWmmaTileOps(llvm::IRBuilderBase &b,
                                                 GpuTargetInfo &target);

} // namespace fmhajit
