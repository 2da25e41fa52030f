//===- AmdgpuMfmaTileOps.cpp - pipeline=mfma on CDNA (wave64) -------------===//
//
// v_mfma_f32_32x32x8{f16,bf16_1k} (gfx90a, gfx942; kl = 4) and
// v_mfma_f32_32x32x16_{f16,bf16} (gfx950; kl = 8): D (32x32) = A B + C.
// Lane l, group h = l / 32 (CDNA3 ISA, "Matrix Fused Multiply Add", and
// AMD's matrix instruction calculator):
//   A (32 x k): row l % 32, k = h*kl + e for element e < kl
//   B (k x 32): column l % 32, the same k
//   D (32x32):  column l % 32, element r < 16 at row 8*(r/4) + 4*h + r%4
// P^T from S^T's accumulators: step s of a 32-key block takes elements
// s*kl .. s*kl + kl-1, so B's element e is the key accRow(h, s*kl + e).
// For kl = 4 that is keys 8s + 4h + e, exactly B's own k order; for kl = 8
// it is two runs of four (16s + 4h + e, 16s + 8 + 4h + e), a permutation
// of the step's 16 keys that V^T's A operand follows with two 8-byte loads:
//   call <16 x float> @llvm.amdgcn.mfma.f32.32x32x8bf16.1k(
//       <4 x i16> %vT, <4 x i16> %pT, <16 x float> %acc, i32 0, i32 0, i32 0)
//
//===----------------------------------------------------------------------===//
#include "ir/targets/AmdgpuMatrixTileOps.h"
#include "ir/targets/AmdgpuTarget.h"
#include "specs/ArchTable.h"
#include "specs/pipelines/BackwardMmaLayout.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"

using namespace fmhajit;
using namespace llvm;

namespace {
class MfmaInstr : public AmdgpuMatrixInstr {
public:
  /// \p operand: the intrinsic's A/B type, <kl x half|i16|bfloat>.
  MfmaInstr(unsigned k, Intrinsic::ID id, Type *operand)
      : AmdgpuMatrixInstr(32, k, k / 2, 16), id(id), operand(operand) {}

  Value *operandK0(IRBuilderBase &b, Value *h) const override {
    return b.CreateMul(h, b.getInt32(kPerLane));
  }
  Value *accRow(IRBuilderBase &b, Value *h, unsigned r) const override {
    return b.CreateAdd(b.CreateShl(h, 2), b.getInt32(8 * (r / 4) + r % 4));
  }
  Value *multiply(IRBuilderBase &b, Value *a, Value *bOp,
                  Value *c) const override {
    return b.CreateIntrinsic(id, {},
                             {b.CreateBitCast(a, operand),
                              b.CreateBitCast(bOp, operand), c, b.getInt32(0),
                              b.getInt32(0), b.getInt32(0)});
  }
  Value *accumulatorOperand(IRBuilderBase &b, ArrayRef<Value *> acc,
                            unsigned step, Value *, Value *) const override {
    Value *v = PoisonValue::get(FixedVectorType::get(b.getInt16Ty(), kPerLane));
    for (unsigned e = 0; e < kPerLane; ++e)
      v = b.CreateInsertElement(v, acc[step * kPerLane + e], uint64_t(e));
    return v;
  }
  // Runs of four keys: 8 * (step*kl/4 + run) + 4h onwards.
  Value *transposedOperand(IRBuilderBase &b, Value *row, unsigned step,
                           Value *h) const override {
    Value *v = nullptr;
    for (unsigned run = 0; run < kPerLane / 4; ++run) {
      Value *key = b.CreateAdd(b.CreateShl(h, 2),
                               b.getInt32(8 * (step * kPerLane / 4 + run)));
      Value *four =
          loadI16s(b, b.CreateInBoundsGEP(b.getInt16Ty(), row, key), 4);
      v = v ? b.CreateShuffleVector(v, four,
                                    ArrayRef<int>{0, 1, 2, 3, 4, 5, 6, 7})
            : four;
    }
    return v;
  }

private:
  Intrinsic::ID id;
  Type *operand;
};

std::unique_ptr<AmdgpuMatrixInstr> mfmaFor(LLVMContext &ctx,
                                           const KernelSpec &spec) {
  bool half = spec.dtype == DType::F16;
  if (findArch(spec.target)->pipeline(Pipeline::Mfma)->shape ==
      "32x32x16") { // gfx950
    Intrinsic::ID id = half ? Intrinsic::amdgcn_mfma_f32_32x32x16_f16
                            : Intrinsic::amdgcn_mfma_f32_32x32x16_bf16;
    Type *elem = half ? Type::getHalfTy(ctx) : Type::getBFloatTy(ctx);
    return std::make_unique<MfmaInstr>(16, id, FixedVectorType::get(elem, 8));
  }
  Intrinsic::ID id = half ? Intrinsic::amdgcn_mfma_f32_32x32x8f16
                          : Intrinsic::amdgcn_mfma_f32_32x32x8bf16_1k;
  Type *elem = half ? Type::getHalfTy(ctx)
                    : Type::getInt16Ty(ctx); // bf16_1k takes i16 bits
  return std::make_unique<MfmaInstr>(8, id, FixedVectorType::get(elem, 4));
}
} // namespace

// Q stays in registers (AmdgpuMatrixLayout::queryInShared is false for
// mfma): CDNA's 512 VGPRs+AGPRs a lane hold its B operands beside the S^T
// and O^T accumulators.
std::unique_ptr<TileOps>
fmhajit::createAmdgpuMfmaTileOps(IRBuilderBase &b, GpuTargetInfo &target) {
  std::unique_ptr<AmdgpuMatrixInstr> instr =
      mfmaFor(b.getContext(), target.kernelSpec());
  if (isBackwardFamily(target.kernelSpec().family))
    return createAmdgpuBackwardTileOps(b, target, std::move(instr));
  return createAmdgpuMatrixTileOps(b, target, std::move(instr));
}
