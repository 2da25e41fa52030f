//===- NvptxTarget.cpp - NVIDIA GPUs through LLVM's NVPTX backend ---------===//
//
// Kernel entry sketch:
//   @fmhajit_smem = external addrspace(3) global [0 x i8], align 16
//   define ptx_kernel void @<name>(ptr byval(%fmhajit.KernelArgs) align 8 %p)
//       "nvvm.maxntid"="<threads>" {
//     %w = total - 1 - ctaid.x ; <body(%p, %w)>
//   }
// Kernels that load by TMA (pipeline=wgmma, stages>=2) take a second,
// grid-constant parameter, their tensor maps, and split the block into a
// producer warpgroup and consumers (emitBlockWorkItem); a persistent one
// (walksWorkItems) has each role walk the block's work items in a loop.
// Fast math: ex2.approx.ftz.f32 (2^x for x < -126 flushes to +0, as the
// recipe requires) and lg2.approx.f32.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "ir/PersistentSchedule.h"
#include "ir/TileOps.h"
#include "ir/targets/GpuTarget.h"
#include "ir/targets/NvptxTimeline.h"
#include "ir/targets/NvptxTma.h"
#include "ir/targets/NvptxValuePretranspose.h"
#include "specs/pipelines/BackwardMmaLayout.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/InlineAsm.h"
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
    if (!usesTensorMaps(spec))
      return;
    // The tensor maps stay in parameter space, where TMA reads them through
    // their generic address (cvta.param), rather than being copied.
    LLVMContext &ctx = fn.getContext();
    auto *maps = ArrayType::get(Type::getInt8Ty(ctx), sizeof(TensorMaps));
    fn.addParamAttr(1, Attribute::getWithByValType(ctx, maps));
    fn.addParamAttr(
        1, Attribute::getWithAlignment(ctx, Align(alignof(TensorMaps))));
    fn.addParamAttr(1, Attribute::get(ctx, "nvvm.grid_constant"));
  }

  SmallVector<Type *, 1> extraParams(LLVMContext &ctx) const override {
    if (!usesTensorMaps(spec))
      return {};
    return {PointerType::get(ctx, 0)};
  }

  // Split-KV's kernels overlap their launches (arch grid_dependency): a
  // split kernel lets the combine launch as soon as each block has
  // started, and both are launched with programmatic stream serialization
  // (CudaKernelChecks.cpp), so each may start while the kernel before it
  // on the stream still runs: the combine while its split kernel does,
  // the next call's split kernel while this call's combine (or, in one
  // part, split kernel) does. A v_pretranspose kernel does the same behind
  // its V^T pass. Each waits here for that kernel to finish and its writes
  // to be visible before it touches global memory: the previous kernel may
  // have written this one's inputs, or still read the workspace this one
  // writes. Without that launch attribute the wait returns at once.
  void emitGridDependency(IRBuilderBase &b) {
    if (!arch.gridDependency || !waitsForKernelBefore(spec))
      return;
    if (hasSplitWorkItems(spec.family))
      b.CreateIntrinsic(Intrinsic::nvvm_griddepcontrol_launch_dependents, {});
    b.CreateIntrinsic(Intrinsic::nvvm_griddepcontrol_wait, {});
  }

  // Warp specialization: barriers first, then the producer warpgroup (the
  // last), whose first warp emits the recipe with the producer's ops (and,
  // under fp8, its other three with the transposers'), and the consumer
  // warps with theirs. The producer gives up its registers and the
  // consumers take them (setmaxnreg).
  void emitBlockWorkItem(
      IRBuilderBase &b, Value *params,
      function_ref<void(IRBuilderBase &, Value *, Value *)> body) override {
    emitGridDependency(b);
    bool blockTimes = options.timeline && isSplitKvFamily(spec.family);
    if (blockTimes)
      emitBlockTimeStamp(b, BlockEvent::Start);
    emitRoles(b, params, body);
    if (blockTimes)
      emitBlockTimeStamp(b, BlockEvent::End);
  }

  void emitRoles(IRBuilderBase &b, Value *params,
                 function_ref<void(IRBuilderBase &, Value *, Value *)> body) {
    if (!usesTensorMaps(spec))
      return GpuTargetInfo::emitBlockWorkItem(b, params, body);
    tensorMaps = b.GetInsertBlock()->getParent()->getArg(1);
    ringCounters = TmaRing::emitCounters(b);
    TmaRing::emitInit(b, *this);
    Value *warp = b.CreateLShr(threadId(b), b.getInt32(5));
    auto emitAs = [&](WarpRole role) {
      warpRole = role;
      emitWorkItems(b, params, body);
      warpRole = WarpRole::Whole;
    };
    RegisterSplit split = registerSplit();
    emitIfElse(
        b, b.CreateICmpUGE(warp, b.getInt32(spec.warps)), "producer",
        [&] {
          if (split.producer)
            b.CreateIntrinsic(Intrinsic::nvvm_setmaxnreg_dec_sync_aligned_u32,
                              {b.getInt32(split.producer)});
          if (!WgmmaLayout(spec, arch).transposesValues())
            return emitIf(b, b.CreateICmpEQ(warp, b.getInt32(spec.warps)),
                          "loads", [&] { emitAs(WarpRole::Producer); });
          emitIfElse(
              b, b.CreateICmpEQ(warp, b.getInt32(spec.warps)), "loads",
              [&] { emitAs(WarpRole::Producer); },
              [&] { emitAs(WarpRole::Transposer); });
        },
        [&] {
          if (split.consumer)
            b.CreateIntrinsic(Intrinsic::nvvm_setmaxnreg_inc_sync_aligned_u32,
                              {b.getInt32(split.consumer)});
          emitFirstProductTurn(b, *this);
          emitAs(WarpRole::Consumers);
        });
  }

  /// This block's work item, or under walksWorkItems (a persistent grid)
  /// one item a round in PersistentSchedule's order. Every role walks the
  /// same items, so the ring's counts agree.
  void
  emitWorkItems(IRBuilderBase &b, Value *params,
                function_ref<void(IRBuilderBase &, Value *, Value *)> body) {
    if (!walksWorkItems(spec))
      return GpuTargetInfo::emitBlockWorkItem(b, params, body);
    // The launch checked that the items fit in 31 bits: the walk's cursor
    // counts in 32 bits, and only it is carried from item to item. The
    // schedule is derived from the item count and the grid again where it
    // is used, and nothing is hoisted out of the walk: what an item derives
    // from the kernel's parameters would otherwise stay in registers
    // through every item.
    ArgsReader p(b, params);
    auto schedule = [&] {
      Value *items = b.CreateTrunc(p.workItems(spec), b.getInt32Ty(), "items");
      Value *grid =
          b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_nctaid_x, {});
      return PersistentSchedule(spec, b, p, items, grid);
    };
    LLVMContext &ctx = b.getContext();
    Function *fn = b.GetInsertBlock()->getParent();
    Value *first = schedule().firstCursor(blockId(b));
    BasicBlock *pre = b.GetInsertBlock();
    BasicBlock *header = BasicBlock::Create(ctx, "round", fn);
    BasicBlock *roundBody = BasicBlock::Create(ctx, "round.body", fn);
    BasicBlock *exit = BasicBlock::Create(ctx, "round.exit", fn);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    PHINode *cursor = b.CreatePHI(b.getInt32Ty(), 2, "round.cursor");
    cursor->addIncoming(first, pre);
    b.CreateCondBr(schedule().walks(cursor), roundBody, exit);
    b.SetInsertPoint(roundBody);
    std::pair<Value *, Value *> item = schedule().workItem(cursor, blockId(b));
    emitIf(b, item.first, "item", [&] { body(b, params, item.second); });
    cursor->addIncoming(schedule().nextCursor(cursor), b.GetInsertBlock());
    disableHoisting(b.CreateBr(header));
    b.SetInsertPoint(exit);
  }

  /// Registers a producer and a consumer thread keep after setmaxnreg (0:
  /// no change). The block launches with the register file shared evenly
  /// (ptxas' limit for nvvm.maxntid). What the consumers gain comes only
  /// from what the producer warpgroup gives up inside the block (an
  /// increase the released registers cannot cover blocks forever), so the
  /// producer keeps at least 24 (32 with the fp8 transposers, or when it
  /// walks work items, which spill at 24), the consumers share the rest in
  /// multiples of 8 up to 256, and the producer keeps what that rounding
  /// leaves.
  struct RegisterSplit {
    unsigned producer = 0, consumer = 0;
  };
  RegisterSplit registerSplit() const {
    const unsigned file = 65536, groupThreads = 128;
    bool busyProducer =
        WgmmaLayout(spec, arch).transposesValues() || walksWorkItems(spec);
    unsigned producer = busyProducer ? 32 : 24;
    unsigned groups = numThreads() / groupThreads;
    unsigned launched = std::min(256u, file / numThreads() / 8 * 8);
    unsigned consumer = std::min(
        256u, (launched + (launched - producer) / (groups - 1)) / 8 * 8);
    if (consumer <= launched)
      return {};
    // Whatever the rounding leaves stays with the producer.
    return {launched - (consumer - launched) * (groups - 1), consumer};
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

  void emitSiblingKernels(Module &m) override {
    if (spec.v_pretranspose)
      emitValuePretransposeKernel(*this, m);
  }

  std::unique_ptr<TileOps> createTileOps(IRBuilderBase &b) override {
    if (spec.pipeline == Pipeline::Mma && isBackwardFamily(spec.family))
      return createNvptxBackwardTileOps(b, *this);
    if (spec.pipeline == Pipeline::Mma)
      return createNvptxMmaTileOps(b, *this);
    if (spec.pipeline == Pipeline::Wgmma && isBackwardFamily(spec.family))
      return createNvptxWgmmaBackwardTileOps(b, *this);
    if (spec.pipeline == Pipeline::Wgmma && warpRole == WarpRole::Producer)
      return createNvptxTmaProducerOps(b, *this);
    if (spec.pipeline == Pipeline::Wgmma && warpRole == WarpRole::Transposer)
      return createNvptxFp8TransposerOps(b, *this);
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
  // prefetch is PTX 2.0 (every sm_*), but LLVM 22 selects
  // llvm.nvvm.prefetch.global.L1 only for sm_90 and PTX 8.0: inline asm.
  void prefetch(IRBuilderBase &b, Value *pointer) override {
    Type *globalPtr = PointerType::get(b.getContext(), 1);
    auto *asmType =
        FunctionType::get(b.getVoidTy(), {globalPtr}, /*isVarArg=*/false);
    b.CreateCall(InlineAsm::get(asmType, "prefetch.global.L1 [$0];", "l",
                                /*hasSideEffects=*/true),
                 {b.CreateAddrSpaceCast(pointer, globalPtr)});
  }
  Value *opaqueBase(IRBuilderBase &b, Value *pointer) override {
    if (pointer->getType()->isVectorTy())
      return pointer;
    auto *copy = InlineAsm::get(
        FunctionType::get(pointer->getType(), {pointer->getType()}, false),
        "mov.b64 $0, $1;", "=l,l", /*hasSideEffects=*/true);
    return b.CreateCall(copy, {pointer});
  }
  // Flushing is safe: tanh's denominator is at least 2, and a reciprocal
  // below 2^-126 only makes tanh round to 1 a little earlier.
  Value *reciprocal(IRBuilderBase &b, Value *x) override {
    auto rcp = [&](Value *v) {
      return b.CreateIntrinsic(Intrinsic::nvvm_rcp_approx_ftz_f, {}, {v});
    };
    auto *vector = dyn_cast<FixedVectorType>(x->getType());
    if (!vector)
      return rcp(x);
    Value *out = PoisonValue::get(vector);
    for (unsigned i = 0; i < vector->getNumElements(); ++i)
      out = b.CreateInsertElement(out, rcp(b.CreateExtractElement(x, i)), i);
    return out;
  }
};
} // namespace

std::unique_ptr<TargetInfo>
fmhajit::createNvptxTargetInfo(const KernelSpec &spec, const ArchInfo &arch) {
  return std::make_unique<NvptxTargetInfo>(spec, arch);
}
