//===- KernelEmitter.cpp - Spec to LLVM module ----------------------------===//
#include "ir/KernelEmitter.h"
#include "ir/AppendKvKernel.h"
#include "ir/BackwardKernel.h"
#include "ir/ForwardKernel.h"
#include "ir/SplitKvCombine.h"
#include "ir/TargetInfo.h"
#include "ir/Variant.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/pipelines/BackwardMmaLayout.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;
using namespace llvm;

// Every feature the spec model accepts but the recipes do not implement yet.
static Error checkImplemented(const KernelSpec &spec) {
  fmhajit::ErrorList missing;
  auto need = [&](bool asked, const Twine &feature) {
    if (asked)
      missing.add(ErrorKind::Unsupported,
                  feature + " is not implemented yet (kernel " +
                      encodeName(spec) + ")");
  };
  const ArchInfo *arch = findArch(spec.target);
  bool backward = isBackwardFamily(spec.family);
  // The host writes dQ from bwd_dq_dk_dv (docs/design.md); so does a GPU
  // kernel with deterministic=1, but its plan needs no conversion either.
  need(spec.family == Family::BwdConvertDq && arch->backend == Backend::Host,
       "family=bwd_convert_dq on the host (the host backward writes dQ from "
       "bwd_dq_dk_dv; no conversion step)");
  // RDNA3's WMMA operands hold all 16 k in both lane groups (AmdgpuWmma
  // TileOps.cpp): bwd_dq_dk_dv spilled 119-145 VGPRs on gfx1100 at every
  // default tile; RDNA4 (gfx12) runs it without.
  need(backward && StringRef(arch->cpu).starts_with("gfx11"),
       "family=" + keyOf(spec.family) + " on target " + spec.target +
           " (the AMD backward runs on CDNA, pipeline mfma, and RDNA4, "
           "gfx12 pipeline wmma)");
  // Dropout is for training, whose inputs are not fp8; P's fp8 shift and
  // the mask have not been made to meet.
  need(spec.dropout && isFp8(spec.dtype),
       "dropout=1 with dtype=" + keyOf(spec.dtype) +
           " (dropout takes fp32, fp16 and bf16)");
  // The forward folds the sink into m and l (AttentionSink.h); the
  // backward would need the sinks' own gradient, which nothing computes.
  need(spec.sink && backward,
       "sink=1 on family=" + keyOf(spec.family) +
           " (no gradient for the sinks; the forward families take sink=1)");
  // The forward adds the bias to its scores (ScoreMods.h); the backward
  // would need the bias's gradient, varlen a layout for padded sequences
  // and fwd_paged one for per-sequence key counts: none is decided yet.
  bool elementwise = spec.bias == Bias::Elementwise;
  need(elementwise && backward,
       "bias=elementwise on family=" + keyOf(spec.family) +
           " (no gradient for the bias; the families fwd and fwd_splitkv "
           "take bias=elementwise)");
  need(elementwise && spec.varlen,
       "bias=elementwise with varlen=1 (the bias is [batch, heads, seqlen_q, "
       "seqlen_k]: no layout for packed sequences yet)");
  need(elementwise && spec.family == Family::FwdPaged,
       "bias=elementwise on family=fwd_paged (use fwd or fwd_splitkv)");
  need(isFp8(spec.dtype) && spec.pipeline != Pipeline::Wgmma,
       "dtype=" + keyOf(spec.dtype) + " on pipeline=" + keyOf(spec.pipeline) +
           " (fp8 runs on pipeline=wgmma, target sm_90a)");
  // wgmma's stages=2 is its TMA ring (WgmmaLayout.h).
  bool matrix = spec.pipeline == Pipeline::Mma ||
                spec.pipeline == Pipeline::Mfma ||
                spec.pipeline == Pipeline::Wmma;
  need(matrix && spec.stages > 1, "pipeline=" + keyOf(spec.pipeline) +
                                      " with stages=" + Twine(spec.stages) +
                                      " (K/V prefetch)");
  return missing.take();
}

Expected<std::unique_ptr<Module>>
fmhajit::emitKernelModule(const KernelSpec &spec, LLVMContext &ctx,
                          const EmitOptions &options,
                          std::unique_ptr<Module> variant) {
  if (Error err = checkImplemented(spec))
    return std::move(err);
  if (spec.variant.empty() != !variant)
    return makeError(ErrorKind::Usage,
                     variant ? "a variant was given for kernel " +
                                   encodeName(spec) + ", which has none"
                             : "kernel " + encodeName(spec) +
                                   " needs its variant's source (" +
                                   spec.variant.hex + ")");
  const ArchInfo *arch = findArch(spec.target);
  assert(arch && "emitKernelModule takes resolved specs");
  Expected<std::unique_ptr<TargetInfo>> target = createTargetInfo(spec, *arch);
  if (!target)
    return target.takeError();
  (*target)->options = options;
  auto module = std::make_unique<Module>(encodeName(spec), ctx);
  if (variant)
    if (Error err = linkVariant(*module, std::move(variant)))
      return std::move(err);
  switch (spec.family) {
  case Family::SplitKvCombine:
    emitSplitKvCombineKernel(spec, **target, *module);
    break;
  case Family::AppendKv:
    emitAppendKvKernel(spec, **target, *module);
    break;
  case Family::BwdDotDoO:
    emitDotDoOKernel(spec, **target, *module);
    break;
  case Family::BwdDqDkDv:
    emitDqDkDvKernel(spec, **target, *module);
    break;
  case Family::BwdConvertDq:
    emitConvertDqKernel(spec, **target, *module);
    break;
  default: // fwd, fwd_splitkv, fwd_paged: one recipe
    emitForwardKernel(spec, **target, *module);
    break;
  }
  (*target)->emitSiblingKernels(*module);
  inlineVariant(*module, **target);
  std::string problems;
  raw_string_ostream os(problems);
  if (verifyModule(*module, &os))
    return makeError(ErrorKind::Jit, "internal error: invalid IR for " +
                                         encodeName(spec) + ": " + problems);
  return std::move(module);
}
