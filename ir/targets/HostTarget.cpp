//===- HostTarget.cpp - x86-64 host target --------------------------------===//
//
// Kernel entry sketch:
//   define void @<name>(ptr %params, i64 %begin, i64 %end) nounwind {
//     for %w in [%begin, %end): <body(%params, %w)>
//   }
//
//===----------------------------------------------------------------------===//
#include "ir/targets/HostTarget.h"
#include "ir/Loops.h"
#include "ir/targets/HostTileOps.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

using namespace fmhajit;
using namespace llvm;

namespace {
class HostTargetInfo : public TargetInfo {
public:
  HostTargetInfo(unsigned lanes, bool amx, bool packsAtLoad)
      : lanes(lanes), amx(amx), packsAtLoad(packsAtLoad) {}

  Function *emitKernel(
      Module &m, StringRef name, StructType *params,
      function_ref<void(IRBuilderBase &, Value *, Value *)> body) override {
    LLVMContext &ctx = m.getContext();
    Type *i64 = Type::getInt64Ty(ctx);
    auto *type = FunctionType::get(Type::getVoidTy(ctx),
                                   {PointerType::get(ctx, 0), i64, i64}, false);
    Function *fn = Function::Create(type, Function::ExternalLinkage, name, m);
    fn->addFnAttr(Attribute::NoUnwind);
    // Tile copies must stay inline loops: as memcpy/memset calls they would
    // cost a call per row in the hot loop.
    fn->addFnAttr("no-builtins");
    // Some kernels (bf16 d=160 split-KV for sapphirerapids, where the
    // vectors are bf16 too) need more than one round of instcombine, and
    // LLVM builds that verify its fixpoint would abort the process.
    fn->addFnAttr("instcombine-no-verify-fixpoint");
    fn->addParamAttr(0, Attribute::NoAlias);
    fn->addParamAttr(0, Attribute::ReadOnly);
    IRBuilder<> b(BasicBlock::Create(ctx, "entry", fn));
    Value *p = fn->getArg(0);
    emitFor(b, fn->getArg(1), fn->getArg(2), b.getInt64(1), "work",
            [&](Value *w) { body(b, p, w); });
    b.CreateRetVoid();
    return fn;
  }

  // 2^x = 2^n * 2^f with n = round(x), f in [-1/2, 1/2]; 2^f by its Taylor
  // series to degree 6 (truncation ~2e-7 relative). 2^n: AVX-512's vscalefps
  // multiplies by it in one instruction (and overflows to inf past 127);
  // elsewhere the float's exponent bits are built from n. Below -126 the
  // result is exactly 0, so no denormal reaches the products.
  Value *exp2(IRBuilderBase &b, Value *x) override {
    auto c = [&](double v) {
      return splatLike(b, ConstantFP::get(b.getFloatTy(), v), x);
    };
    bool scalef = hasScalef(x);
    Value *clamped = b.CreateMaxNum(x, c(-126.0));
    if (!scalef)
      clamped = b.CreateMinNum(clamped, c(127.0));
    Value *n = b.CreateUnaryIntrinsic(Intrinsic::roundeven, clamped);
    Value *f = b.CreateFSub(clamped, n);
    static const double kCoeffs[] = {1.5403530393381606e-4,
                                     1.3333558146428443e-3,
                                     9.618129107628477e-3,
                                     5.550410866482158e-2,
                                     2.402265069591007e-1,
                                     6.931471805599453e-1,
                                     1.0};
    Value *poly = c(kCoeffs[0]);
    for (double k : ArrayRef<double>(kCoeffs).drop_front())
      poly = b.CreateIntrinsic(Intrinsic::fmuladd, {poly->getType()},
                               {poly, f, c(k)});
    Value *scaled =
        scalef ? scaleByPowerOf2(b, poly, n) : multiplyByPowerOf2(b, poly, n);
    return b.CreateSelect(b.CreateFCmpOLT(x, c(-126.0)), c(0.0), scaled);
  }

  // log2(x) = e + log2(m) with x = m * 2^e, m in [sqrt(1/2), sqrt(2)), and
  // log2(m) = 2/ln2 * atanh(t), t = (m - 1)/(m + 1), |t| < 0.172, by its odd
  // series to t^9 (error < 1e-9). Inline, so no libm call is left behind.
  Value *log2(IRBuilderBase &b, Value *x) override {
    auto c = [&](double v) {
      return splatLike(b, ConstantFP::get(b.getFloatTy(), v), x);
    };
    Type *intType = x->getType()->getWithNewType(b.getInt32Ty());
    auto ci = [&](uint32_t v) { return ConstantInt::get(intType, v); };
    Value *bits = b.CreateBitCast(x, intType);
    Value *e = b.CreateSIToFP(b.CreateSub(b.CreateLShr(bits, ci(23)), ci(127)),
                              x->getType());
    Value *m = b.CreateBitCast(
        b.CreateOr(b.CreateAnd(bits, ci(0x7FFFFF)), ci(0x3F800000)),
        x->getType());
    Value *big = b.CreateFCmpOGT(m, c(1.4142135623730951));
    m = b.CreateSelect(big, b.CreateFMul(m, c(0.5)), m);
    e = b.CreateSelect(big, b.CreateFAdd(e, c(1.0)), e);
    Value *t = b.CreateFDiv(b.CreateFSub(m, c(1.0)), b.CreateFAdd(m, c(1.0)));
    Value *t2 = b.CreateFMul(t, t);
    Value *series = c(1.0 / 9);
    for (double k : {1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0})
      series = b.CreateIntrinsic(Intrinsic::fmuladd, {x->getType()},
                                 {series, t2, c(k)});
    return b.CreateIntrinsic(Intrinsic::fmuladd, {x->getType()},
                             {b.CreateFMul(series, t), c(2.0 * kLog2e), e});
  }

  Value *narrow(IRBuilderBase &b, Value *x, DType t) override {
    return t == DType::BF16 ? roundToBf16(b, x) : TargetInfo::narrow(b, x, t);
  }

  std::unique_ptr<TileOps> createTileOps(IRBuilderBase &b) override {
    return createHostTileOps(b, lanes, amx, packsAtLoad);
  }

private:
  /// vscalefps applies: AVX-512 and a whole 512-bit vector.
  bool hasScalef(Value *x) const {
    auto *vt = dyn_cast<FixedVectorType>(x->getType());
    return lanes == 16 && vt && vt->getNumElements() == 16;
  }
  /// p * 2^n by vscalefps (n integral).
  static Value *scaleByPowerOf2(IRBuilderBase &b, Value *p, Value *n) {
    constexpr unsigned kCurrentRounding = 4;
    return b.CreateIntrinsic(Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                             {p, n, PoisonValue::get(p->getType()),
                              b.getInt16(0xFFFF),
                              b.getInt32(kCurrentRounding)});
  }
  /// p * 2^n for integral n in [-126, 127], by building 2^n's exponent bits.
  static Value *multiplyByPowerOf2(IRBuilderBase &b, Value *p, Value *n) {
    Value *ni = b.CreateFPToSI(n, n->getType()->getWithNewType(b.getInt32Ty()));
    Value *bits =
        b.CreateShl(b.CreateAdd(ni, splatLike(b, b.getInt32(127), ni)),
                    splatLike(b, b.getInt32(23), ni));
    return b.CreateFMul(p, b.CreateBitCast(bits, p->getType()));
  }

  unsigned lanes;
  bool amx;
  bool packsAtLoad;
};
} // namespace

std::unique_ptr<TargetInfo>
fmhajit::createHostTargetInfo(unsigned lanes, bool amx, bool packsAtLoad) {
  return std::make_unique<HostTargetInfo>(lanes, amx, packsAtLoad);
}

Value *fmhajit::roundToBf16(IRBuilderBase &b, Value *x) {
  Type *ints = x->getType()->getWithNewType(b.getInt32Ty());
  auto k = [&](uint32_t v) { return ConstantInt::get(ints, v); };
  Value *bits = b.CreateBitCast(x, ints);
  Value *odd = b.CreateAnd(b.CreateLShr(bits, k(16)), k(1));
  Value *rounded =
      b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(odd, k(0x7FFF))), k(16));
  Value *isNan = b.CreateFCmpUNO(x, x);
  Value *half = b.CreateSelect(isNan, k(0x7FC0), rounded);
  return b.CreateBitCast(
      b.CreateTrunc(half, x->getType()->getWithNewType(b.getInt16Ty())),
      x->getType()->getWithNewType(b.getBFloatTy()));
}

// Linux hands a process the AMX tile registers only once it asks
// (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA); the first tile
// instruction of a process that did not ask dies with SIGILL.
static bool mayUseAmx() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtileData = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
#else
  return false;
#endif
}

// The AMX features count only once the OS lets this process use them, so
// no kernel compiled (or loaded from the cache, whose key holds these
// features) here issues a tile instruction it may not.
const StringMap<bool> &fmhajit::hostCpuFeatures() {
  static const StringMap<bool> features = [] {
    StringMap<bool> f = sys::getHostCPUFeatures();
    if (f.lookup("amx-tile") && !mayUseAmx())
      for (auto &entry : f)
        if (entry.first().starts_with("amx-"))
          entry.second = false;
    return f;
  }();
  return features;
}

bool fmhajit::hostHasAmxBf16(const ArchInfo &arch) {
  if (arch.cpu == "native")
    return hostCpuFeatures().lookup("amx-bf16");
  SmallVector<StringRef, 64> features;
  X86::getFeaturesForCPU(arch.cpu, features);
  return is_contained(features, "amx-bf16");
}

unsigned fmhajit::hostVectorLanes(const ArchInfo &arch) {
  if (arch.vectorBits)
    return arch.vectorBits / 32;
  const StringMap<bool> &features = hostCpuFeatures();
  if (features.lookup("avx512f"))
    return 16;
  if (features.lookup("avx2"))
    return 8;
  return 4;
}
