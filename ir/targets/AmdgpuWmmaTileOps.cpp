//===- AmdgpuWmmaTileOps.cpp - pipeline=wmma on RDNA3/4 (wave32) ----------===//
//
// v_wmma_f32_16x16x16_{f16,bf16}: D (16x16) = A B + C. Lane l, group
// h = l / 16 (RDNA3 and RDNA4 ISA, "Wave Matrix Multiply Accumulate"):
//            gfx11 (RDNA3)                gfx12 (RDNA4)
//   A, B     row/column l % 16, all 16 k  row/column l % 16, k = 8h + e
//            (both groups hold the same)  (8 elements)
//   D        column l % 16, element r     column l % 16, element r
//            at row 2r + h                at row r + 8h
// P^T from S^T's accumulators:
//  - gfx12: a lane's eight probabilities are keys 8h + r, B's own order.
//  - gfx11: a lane holds only the keys 2r + h, and B needs all 16: the
//    other group's eight come over with ds_bpermute (lane ^ 16), and B's
//    element e is key 2*(e%8) + e/8 (own eight first in group 0, the
//    partner's first in group 1). V^T's A operand loads the 16 keys in
//    order and shuffles them alike:
//      %a = shufflevector <16 x i16> %keys, poison, <0,2,..,14,1,3,..,15>
//      call <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16(
//          <16 x half> %a, <16 x half> %pT, <8 x float> %acc)
// Q lives in LDS: RDNA has 256 VGPRs a lane, which the O^T accumulators
// (up to 128 for dv = 256) and gfx11's doubled operands would overrun.
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
class WmmaInstr : public AmdgpuMatrixInstr {
public:
  WmmaInstr(bool gfx12, bool half)
      : AmdgpuMatrixInstr(16, 16, gfx12 ? 8 : 16, 8), gfx12(gfx12), half(half) {
  }

  Value *operandK0(IRBuilderBase &b, Value *h) const override {
    return gfx12 ? b.CreateShl(h, 3) : b.getInt32(0);
  }
  Value *accRow(IRBuilderBase &b, Value *h, unsigned r) const override {
    return gfx12 ? b.CreateAdd(b.CreateShl(h, 3), b.getInt32(r))
                 : b.CreateAdd(h, b.getInt32(2 * r));
  }
  Value *multiply(IRBuilderBase &b, Value *a, Value *bOp,
                  Value *c) const override {
    Type *operand =
        FixedVectorType::get(half ? b.getHalfTy() : b.getInt16Ty(), kPerLane);
    return b.CreateIntrinsic(
        half ? Intrinsic::amdgcn_wmma_f32_16x16x16_f16
             : Intrinsic::amdgcn_wmma_f32_16x16x16_bf16,
        {c->getType(), operand},
        {b.CreateBitCast(a, operand), b.CreateBitCast(bOp, operand), c});
  }
  Value *accumulatorOperand(IRBuilderBase &b, ArrayRef<Value *> acc, unsigned,
                            Value *lane, Value *h) const override;
  Value *transposedOperand(IRBuilderBase &b, Value *row, unsigned,
                           Value *h) const override {
    if (gfx12)
      return loadI16s(
          b, b.CreateInBoundsGEP(b.getInt16Ty(), row, b.CreateShl(h, 3)), 8);
    SmallVector<int, 16> order;
    for (int e = 0; e < 16; ++e)
      order.push_back(2 * (e % 8) + e / 8);
    return b.CreateShuffleVector(loadI16s(b, row, 16), order);
  }

private:
  bool gfx12, half;
};

Value *WmmaInstr::accumulatorOperand(IRBuilderBase &b, ArrayRef<Value *> acc,
                                     unsigned, Value *lane, Value *h) const {
  auto *halfVector = FixedVectorType::get(b.getInt16Ty(), 8);
  Value *own = PoisonValue::get(halfVector);
  for (unsigned r = 0; r < 8; ++r)
    own = b.CreateInsertElement(own, acc[r], uint64_t(r));
  if (gfx12)
    return own;
  auto *words = FixedVectorType::get(b.getInt32Ty(), 4);
  Value *ownWords = b.CreateBitCast(own, words);
  Value *partner = PoisonValue::get(words);
  for (unsigned w = 0; w < 4; ++w)
    partner = b.CreateInsertElement(
        partner,
        amdgpuShuffleXor(b, b.CreateExtractElement(ownWords, uint64_t(w)), lane,
                         16),
        uint64_t(w));
  Value *upper = b.CreateICmpNE(h, b.getInt32(0));
  Value *even = b.CreateSelect(upper, partner, ownWords); // keys 0, 2, .., 14
  Value *odd = b.CreateSelect(upper, ownWords, partner);  // keys 1, 3, .., 15
  SmallVector<int, 8> all{0, 1, 2, 3, 4, 5, 6, 7};
  return b.CreateBitCast(b.CreateShuffleVector(even, odd, all),
                         FixedVectorType::get(b.getInt16Ty(), 16));
}
} // namespace

std::unique_ptr<TileOps>
fmhajit::createAmdgpuWmmaTileOps(IRBuilderBase &b, GpuTargetInfo &target) {
  const KernelSpec &spec = target.kernelSpec();
  bool gfx12 = StringRef(findArch(spec.target)->cpu).starts_with("gfx12");
  auto instr = std::make_unique<WmmaInstr>(gfx12, spec.dtype == DType::F16);
  if (isBackwardFamily(spec.family))
    return createAmdgpuBackwardTileOps(b, target, std::move(instr));
  return createAmdgpuMatrixTileOps(b, target, std::move(instr));
}
