//===- AmdgpuTarget.cpp - AMD GPUs through LLVM's AMDGPU backend ----------===//
//
// Kernel entry sketch:
//   @fmhajit.lds = internal addrspace(3) global [<bytes> x i8] poison, align 16
//   define amdgpu_kernel void @<name>(
//       ptr addrspace(4) byref(%fmhajit.KernelArgs) align 8 %p)
//       "amdgpu-flat-work-group-size"="1,<threads>"
//       "target-cpu"="gfx942" "target-features"="+wavefrontsize64"
//       "denormal-fp-math-f32"="preserve-sign,preserve-sign"
//       ["amdgpu-sched-strategy"="iterative-minreg" under wmma] {
//     %w = total - 1 - workgroup.id.x ; <body(%p, %w)>
//   }
// The byref argument makes the kernarg segment the KernelArgs struct itself
// (the code object's .args declare one 200-byte by_value argument), read
// with scalar loads. LDS is one static array of exactly the bytes the tiles
// use (tileFootprintBytes), so the code object's group_segment_fixed_size
// is the LDS a workgroup needs and the runtime passes no dynamic LDS.
//
// Barrier: fence syncscope("workgroup") release; s_barrier; fence acquire,
// so LDS writes before the barrier are visible to every wave after it.
//
// Fast math: v_exp_f32 (llvm.amdgcn.exp2) gives +0 for -inf; with f32
// denormals flushed (the kernel's FP mode, as NVPTX's ex2.approx.ftz) it
// also gives +0 for every x < -126, as TargetInfo::exp2 requires.
// v_log_f32 (llvm.amdgcn.log) for the epilogue's log2.
//
//===----------------------------------------------------------------------===//
#include "ir/targets/AmdgpuTarget.h"
#include "ir/TileOps.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"
#include "llvm/TargetParser/Triple.h"

using namespace fmhajit;
using namespace llvm;

namespace {
constexpr const char *kLdsName = "fmhajit.lds";
constexpr unsigned kCodeObjectVersion = 500;

class AmdgpuTargetInfo : public GpuTargetInfo {
public:
  using GpuTargetInfo::GpuTargetInfo;

  unsigned paramAddressSpace() const override {
    return 4;
  } // constant: kernargs

  void declareKernel(Function &fn, StructType *params) override {
    Module &m = *fn.getParent();
    // Known now, so that allocas land in the private address space (5).
    m.setTargetTriple(Triple(arch.triple));
    m.setDataLayout(m.getTargetTriple().computeDataLayout());
    // Code object v5: what ROCm 5.x and 6.x load (LLVM 22 defaults to v6).
    if (!m.getModuleFlag("amdhsa_code_object_version"))
      m.addModuleFlag(Module::Error, "amdhsa_code_object_version",
                      kCodeObjectVersion);
    fn.setCallingConv(CallingConv::AMDGPU_KERNEL);
    fn.addParamAttr(0, Attribute::getWithByRefType(fn.getContext(), params));
    fn.addParamAttr(0, Attribute::NoAlias);
    fn.addFnAttr("amdgpu-flat-work-group-size",
                 "1," + std::to_string(numThreads()));
    fn.addFnAttr("uniform-work-group-size", "true");
    fn.addFnAttr("target-cpu", arch.cpu);
    fn.addFnAttr("target-features",
                 waveSize() == 64 ? "+wavefrontsize64" : "+wavefrontsize32");
    fn.addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
    // RDNA has 256 VGPRs a lane, which the default scheduler overfills on
    // WMMA kernels (d=80 spilled on gfx1100); the min-register one does not.
    if (spec.pipeline == Pipeline::Wmma)
      fn.addFnAttr("amdgpu-sched-strategy", "iterative-minreg");
  }

  Value *threadId(IRBuilderBase &b) override {
    return b.CreateIntrinsic(Intrinsic::amdgcn_workitem_id_x, {});
  }
  Value *blockId(IRBuilderBase &b) override {
    return b.CreateIntrinsic(Intrinsic::amdgcn_workgroup_id_x, {});
  }
  void barrier(IRBuilderBase &b) override {
    SyncScope::ID workgroup =
        b.getContext().getOrInsertSyncScopeID("workgroup");
    b.CreateFence(AtomicOrdering::Release, workgroup);
    b.CreateIntrinsic(Intrinsic::amdgcn_s_barrier, {});
    b.CreateFence(AtomicOrdering::Acquire, workgroup);
  }
  // One static LDS array for the whole kernel; tile ops carve it up.
  Value *sharedMemory(IRBuilderBase &b, unsigned bytes) override {
    Module &m = *b.GetInsertBlock()->getModule();
    if (GlobalVariable *lds = m.getGlobalVariable(kLdsName, true)) {
      assert(m.getDataLayout().getTypeAllocSize(lds->getValueType()) == bytes &&
             "one LDS size per kernel");
      return lds;
    }
    auto *type = ArrayType::get(b.getInt8Ty(), bytes);
    auto *lds = new GlobalVariable(m, type, false, GlobalValue::InternalLinkage,
                                   PoisonValue::get(type), kLdsName, nullptr,
                                   GlobalValue::NotThreadLocal, 3);
    lds->setAlignment(Align(16));
    return lds;
  }

  std::unique_ptr<TileOps> createTileOps(IRBuilderBase &b) override {
    if (spec.pipeline == Pipeline::Mfma)
      return createAmdgpuMfmaTileOps(b, *this);
    if (spec.pipeline == Pipeline::Wmma)
      return createAmdgpuWmmaTileOps(b, *this);
    return GpuTargetInfo::createTileOps(b);
  }

  Value *exp2(IRBuilderBase &b, Value *x) override {
    return b.CreateIntrinsic(Intrinsic::amdgcn_exp2, {x->getType()}, {x});
  }
  Value *log2(IRBuilderBase &b, Value *x) override {
    return b.CreateIntrinsic(Intrinsic::amdgcn_log, {x->getType()}, {x});
  }
};
} // namespace

std::unique_ptr<TargetInfo>
fmhajit::createAmdgpuTargetInfo(const KernelSpec &spec, const ArchInfo &arch) {
  return std::make_unique<AmdgpuTargetInfo>(spec, arch);
}
