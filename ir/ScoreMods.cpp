//===- ScoreMods.cpp - Soft-cap, ALiBi and the mask on a tile of scores ---===//
#include "ir/ScoreMods.h"
#include "ir/ElementwiseBias.h"
#include "ir/Loops.h"
#include "ir/Variant.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/PatternMatch.h"
#include <cmath>

using namespace fmhajit;
using namespace llvm;
using namespace llvm::PatternMatch;

ScoreMods::ScoreMods(const KernelSpec &spec, TargetInfo &target,
                     IRBuilderBase &b, ArgsReader &p, TileOps &ops)
    : spec(spec), target(target), b(b), p(p), ops(ops) {
  const Module &m = *b.GetInsertBlock()->getModule();
  scoreMod = findScoreMod(m);
  maskMod = findMaskMod(m);
}

Band ScoreMods::band(const WorkItem &s) {
  Band band;
  if (spec.mask == Mask::None)
    return band;
  band.upper = true;
  band.lower = spec.mask == Mask::Window;
  band.offset = spec.mask == Mask::Causal ? i32(0) : b.CreateSub(s.sk, s.sq);
  if (spec.mask != Mask::Window) {
    band.right = i32(0);
    return band;
  }
  // -1 (any negative) is unbounded, and so is anything past sk + sq, which
  // already reaches every key: clamping there keeps i + offset + right from
  // overflowing (as window sizes near 2^31 did). Unsigned compares catch both.
  Value *unbounded = b.CreateAdd(s.sk, s.sq);
  auto clamp = [&](Value *side) {
    return b.CreateSelect(b.CreateICmpUGT(side, unbounded), unbounded, side);
  };
  band.right = clamp(p.get(kWindowRight));
  band.left = clamp(p.get(kWindowLeft));
  return band;
}

std::pair<Value *, Value *> ScoreMods::keyRange(const WorkItem &s,
                                                const Band &band,
                                                const TileTokens &tokens) {
  Value *begin = i32(0), *end = s.sk;
  if (band.lower)
    begin = signedMax(
        b, begin,
        b.CreateSub(b.CreateAdd(tokens.first, band.offset), band.left));
  // V^T from the pass (v_pretranspose) holds its keys permuted in groups
  // of 16, and a paged cache's boxes must not cross a page
  // (loadsPagedBoxes), so their tiles start on whole tiles; the keys before
  // the band are masked like any the band hides.
  if (band.lower && (spec.v_pretranspose || loadsPagedBoxes(spec)))
    begin = b.CreateMul(b.CreateUDiv(begin, i32(spec.bn)), i32(spec.bn));
  if (band.upper)
    end = signedMin(b, end,
                    b.CreateAdd(b.CreateAdd(tokens.last, band.offset),
                                b.CreateAdd(band.right, i32(1))));
  return {begin, end};
}

void ScoreMods::apply(Tile &scores, const WorkItem &s, const Band &band,
                      Value *j0, const TileTokens &tokens, Value *maskModFull) {
  applySoftcap(scores);
  applyBiasAndMask(scores, s, band, j0, tokens, maskModFull);
}

// s = c tanh(s / c), into log2 units: with u = 2 log2e |s| / c (c > 0, as
// the API requires), c log2e tanh(s / c) = c log2e (1 - 2 / (2^u + 1)) with
// the sign of s. Folded so, a score costs seven instructions (a multiply,
// |.|, the exp2, an add, the reciprocal, an fma and a copysign), where
// TargetInfo::tanh between a multiply on either side took nine.
void ScoreMods::applySoftcap(Tile &scores) {
  if (!spec.softcap)
    return;
  Value *c = p.get(kSoftcap);
  // 1 / c, then the constant: a reciprocal, where 2 log2e / c divides
  Value *toExponent = b.CreateFMul(b.CreateFDiv(f32(1), c), f32(2 * kLog2e));
  Value *cLog2e = b.CreateFMul(c, f32(kLog2e));
  Value *minusTwoCLog2e = b.CreateFMul(cLog2e, f32(-2));
  ops.map(scores, [&](IRBuilderBase &b, Value *, Value *, Value *x) {
    Value *u = b.CreateUnaryIntrinsic(
        Intrinsic::fabs, b.CreateFMul(x, splatLike(b, toExponent, x)));
    Value *e = target.exp2(b, u);
    Value *r = target.reciprocal(b, b.CreateFAdd(e, splatLike(b, f32(1), e)));
    Value *t = b.CreateIntrinsic(
        Intrinsic::fmuladd, {x->getType()},
        {r, splatLike(b, minusTwoCLog2e, x), splatLike(b, cLog2e, x)});
    return b.CreateBinaryIntrinsic(Intrinsic::copysign, t, x);
  });
}

void ScoreMods::applyBiasAndMask(Tile &scores, const WorkItem &s,
                                 const Band &band, Value *j0,
                                 const TileTokens &tokens, Value *maskModFull) {
  if (spec.bias == Bias::Alibi)
    applyAlibi(scores, s, j0);
  if (spec.bias == Bias::Elementwise)
    addElementwiseBias(b, p, target, ops, scores, s, j0);
  if (scoreMod)
    applyScoreMod(scores, s, j0);
  applyMask(scores, s, band, j0, tokens, maskModFull);
}

ScoreMods::Position ScoreMods::position(IRBuilderBase &b, const WorkItem &s,
                                        Value *row, Value *col, Value *j0) {
  Value *packed = b.CreateAdd(row, splatLike(b, s.i0, row));
  Value *head = b.CreateTrunc(s.h, b.getInt32Ty());
  Value *h = splatLike(b, head, row);
  if (s.group)
    h = b.CreateAdd(h, queryHeadOffset(b, s, packed));
  return {splatLike(b, b.CreateTrunc(s.b, b.getInt32Ty()), row), h,
          queryToken(b, s, packed), b.CreateAdd(col, splatLike(b, j0, col))};
}

// The variant's functions take the address of KernelArgs::variantTensors
// as a generic pointer (AMDGPU's arguments live in the constant address
// space; once inlined, LLVM infers it back).
Value *ScoreMods::variantTensors() {
  return b.CreateAddrSpaceCast(p.address(kVariantTensors), b.getPtrTy(),
                               "variant.tensors");
}

// The variant sees natural units and the recipe keeps log2 units: x ln2 in,
// f(n) log2e out. A score_mod that adds a term to its score (ALiBi, a bias)
// is written x + (f(n) - n) log2e instead, with reassociation allowed on the
// difference, which folds once inlined to x + t log2e: no round trip (one
// multiply an element less; for other score_mods it would be one more).
void ScoreMods::applyScoreMod(Tile &scores, const WorkItem &s, Value *j0) {
  Value *tensors = variantTensors();
  bool adds = addsToItsScore(*scoreMod);
  ops.map(scores,
          [&](IRBuilderBase &b, Value *row, Value *col, Value *x) -> Value * {
            Position at = position(b, s, row, col, j0);
            Value *natural = b.CreateFMul(x, splatLike(b, f32(kLn2), x));
            Value *modified = callPerLane(
                b, scoreMod, {natural, at.b, at.h, at.q, at.k, tensors});
            Value *log2e = splatLike(b, f32(kLog2e), x);
            if (!adds)
              return b.CreateFMul(modified, log2e);
            IRBuilderBase::FastMathFlagGuard guard(b);
            FastMathFlags reassociable;
            reassociable.setAllowReassoc();
            reassociable.setNoSignedZeros();
            b.setFastMathFlags(reassociable);
            Value *added = b.CreateFSub(modified, natural, "score.mod.added");
            return b.CreateIntrinsic(Intrinsic::fmuladd, {x->getType()},
                                     {added, log2e, x});
          });
}

// Under pack_gqa each row's head has its own slope: a gather, which the
// loop-invariant row index lets LLVM hoist out of the key loop.
Value *ScoreMods::alibiSlopeLog2(const WorkItem &s, Value *slopes, Value *row) {
  Value *packed = b.CreateAdd(row, splatLike(b, s.i0, row));
  Value *head =
      b.CreateAdd(b.CreateZExt(queryHeadOffset(b, s, packed),
                               row->getType()->getWithNewType(b.getInt64Ty())),
                  splatLike(b, s.h, row));
  Value *at = b.CreateInBoundsGEP(b.getFloatTy(), slopes, head);
  Value *slope = nullptr;
  if (at->getType()->isVectorTy())
    slope = b.CreateMaskedGather(row->getType()->getWithNewType(b.getFloatTy()),
                                 at, Align(4));
  else
    slope = b.CreateLoad(b.getFloatTy(), at);
  return b.CreateFMul(slope, splatLike(b, f32(kLog2e), slope));
}

// |x - col| as a float, for x that changes from key tile to key tile. The
// fragment layouts give a column as base + constant: x - base is converted
// once per row and the constant comes off in float (exact below 2^24
// tokens), so an element costs a subtraction, no conversion. Grouped
// otherwise, the loop-invariant row - col of every element would be hoisted
// out of the key loop into a register of its own (the d=64 ALiBi kernel
// spilled).
static Value *distanceToColumn(IRBuilderBase &b, Value *x, Value *col,
                               Type *type) {
  Value *base = nullptr;
  const APInt *offset = nullptr;
  if (!match(col, m_Add(m_Value(base), m_APInt(offset)))) {
    base = col;
    offset = nullptr;
  }
  Value *d = b.CreateSIToFP(b.CreateSub(x, base), type);
  if (offset)
    d = b.CreateFSub(d, ConstantFP::get(type, offset->getSExtValue()));
  return b.CreateUnaryIntrinsic(Intrinsic::fabs, d);
}

// s -= slope_h * |i + sk - sq - j|, i the row's token and h its head: one
// fma with -slope_h an element.
void ScoreMods::applyAlibi(Tile &scores, const WorkItem &s, Value *j0) {
  Value *slopes = p.get(kAlibiSlopes);
  Value *itemSlope = nullptr; // one head per tile unless packed
  if (!s.group)
    itemSlope = b.CreateFMul(
        b.CreateLoad(b.getFloatTy(),
                     b.CreateInBoundsGEP(b.getFloatTy(), slopes, s.h)),
        f32(-kLog2e));
  Value *origin = b.CreateSub(s.sk, s.sq);
  Value *rowOrigin = s.group ? origin : b.CreateAdd(s.i0, origin);
  ops.map(scores, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
    Value *i = s.group
                   ? queryToken(b, s, b.CreateAdd(row, splatLike(b, s.i0, row)))
                   : row;
    Value *rowToTile = b.CreateSub(b.CreateAdd(i, splatLike(b, rowOrigin, i)),
                                   splatLike(b, j0, i));
    Value *dist = distanceToColumn(b, rowToTile, col, x->getType());
    Value *minusSlope = itemSlope
                            ? splatLike(b, itemSlope, x)
                            : b.CreateFNeg(alibiSlopeLog2(s, slopes, row));
    return b.CreateIntrinsic(Intrinsic::fmuladd, {x->getType()},
                             {dist, minusSlope, x});
  });
}

void ScoreMods::applyMask(Tile &scores, const WorkItem &s, const Band &band,
                          Value *j0, const TileTokens &tokens,
                          Value *maskModFull) {
  // Only tiles that cross the band's edges or the end of the keys pay for
  // the per-element mask, and under mask_mod the tiles the block map did
  // not find fully visible (all of them without a map).
  Value *jLast = b.CreateAdd(j0, i32(spec.bn - 1));
  Value *needsMask = b.CreateICmpSGE(jLast, s.sk);
  if (maskMod)
    needsMask = maskModFull ? b.CreateOr(needsMask, b.CreateNot(maskModFull))
                            : b.getTrue();
  if (band.upper)
    needsMask = b.CreateOr(
        needsMask,
        b.CreateICmpSGT(
            jLast,
            b.CreateAdd(tokens.first, b.CreateAdd(band.offset, band.right))));
  if (band.lower)
    needsMask = b.CreateOr(
        needsMask,
        b.CreateICmpSLT(
            j0, b.CreateSub(b.CreateAdd(tokens.last, band.offset), band.left)));
  Value *tensors = maskMod ? variantTensors() : nullptr;
  emitIf(b, needsMask, "mask", [&] {
    ops.map(scores, [&](IRBuilderBase &b, Value *row, Value *col, Value *x) {
      Value *i = queryToken(b, s, b.CreateAdd(row, splatLike(b, s.i0, row)));
      Value *j = b.CreateAdd(col, splatLike(b, j0, col));
      Value *visible = b.CreateICmpSLT(j, splatLike(b, s.sk, j));
      if (band.upper) {
        Value *limit = b.CreateAdd(
            i, splatLike(b, b.CreateAdd(band.offset, band.right), i));
        visible = b.CreateAnd(visible, b.CreateICmpSLE(j, limit));
      }
      if (band.lower) {
        Value *limit = b.CreateAdd(
            i, splatLike(b, b.CreateSub(band.offset, band.left), i));
        visible = b.CreateAnd(visible, b.CreateICmpSGE(j, limit));
      }
      if (maskMod) {
        Position at = position(b, s, row, col, j0);
        visible = b.CreateAnd(
            visible,
            callPerLane(b, maskMod, {at.b, at.h, at.q, at.k, tensors}));
      }
      return b.CreateSelect(visible, x, splatLike(b, f32(-INFINITY), x));
    });
  });
}
