//===- NvptxTarget.cpp - NVIDIA GPUs through LLVM's NVPTX backend ---------===//
//
// Kernel entry sketch:
//   @fmhajit_smem = external addrspace(3) global [0 x i8], align 16
//   define ptx_kernel void @<name>(ptr byval(%fmhajit.KernelArgs) align 8 %p)
//       "nvvm.maxntid"="<threads>" {
//     %w = total - 1 - ctaid.x ; <body(%p, %w)>
//   }
// Fast math: ex2.approx.ftz.f32 (2^x for x < -126 flushes to +0, as the
// recipe requires) and lg2.approx.f32.
//
//===----------------------------------------------------------------------===//
#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class NvptxTargetInfo : public GpuTargetInfo {
public:
  using GpuTargetInfo::GpuTargetInfo;

  void declareKernel(Function &fn, StructType *params) override {
    fn.setCallingConv(CallingConv::PTX_Kernel);
    fn.addParamAttr(0, Attribute::getWithByValType(fn.getContext(), params));
    fn.addFnAttr("nvvm.maxntid", std::to_string(numThreads()));
    // One block per SM is enough: without this ptxas may cap registers to
    // fit more blocks and spill the accumulators instead.
    fn.addFnAttr("nvvm.minctasm", "1");
  }

  Value *threadId(IRBuilderBase &b) override {
    return b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_tid_x, {});
  }
  Value *blockId(IRBuilderBase &b) override {
    return b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {});
  }
  void barrier(IRBuilderBase &b) override {
    b.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_sync_aligned_all,
                      {b.getInt32(0)});
  }
  // Dynamic shared memory: a block may use more than the 48 KiB a static
  // array allows, once the runtime raises the kernel's limit.
  Value *sharedMemory(IRBuilderBase &b, unsigned) override {
    Module &m = *b.GetInsertBlock()->getModule();
    auto *type = ArrayType::get(b.getInt8Ty(), 0);
    GlobalVariable *smem = m.getGlobalVariable("fmhajit_smem");
    if (!smem) {
      smem = new GlobalVariable(m, type, false, GlobalValue::ExternalLinkage,
                                nullptr, "fmhajit_smem", nullptr,
                                GlobalValue::NotThreadLocal, 3);
      smem->setAlignment(Align(16));
    }
    return smem;
  }

  std::unique_ptr<TileOps> createTileOps(IRBuilderBase &b) override {
    if (spec.pipeline == Pipeline::Mma)
      return createNvptxMmaTileOps(b, *this);
    if (spec.pipeline == Pipeline::Wgmma)
      return createNvptxWgmmaTileOps(b, *this);
    return GpuTargetInfo::createTileOps(b);
  }

  Value *exp2(IRBuilderBase &b, Value *x) override {
    return b.CreateIntrinsic(Intrinsic::nvvm_ex2_approx_ftz, {x->getType()},
                             {x});
  }
  Value *log2(IRBuilderBase &b, Value *x) override {
    return b.CreateIntrinsic(Intrinsic::nvvm_lg2_approx_f, {}, {x});
  }
};
} // namespace

std::unique_ptr<TargetInfo>
fmhajit::createNvptxTargetInfo(const KernelSpec &spec, const ArchInfo &arch) {
  return std::make_unique<NvptxTargetInfo>(spec, arch);
}
