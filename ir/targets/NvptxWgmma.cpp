//===- NvptxWgmma.cpp - sm_90a's warpgroup MMA as IR ----------------------===//
#include "ir/targets/NvptxWgmma.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include <string>

using namespace fmhajit;
using namespace llvm;

// Descriptor bits: 0-13 start address >> 4, 16-29 leading byte offset >> 4,
// 32-45 stride byte offset >> 4, 49-51 base offset (0: atoms are 1024-byte
// aligned), 62-63 swizzle (1 = 128 bytes, 2 = 64, 3 = 32).
Value *fmhajit::wgmmaDescriptorLow(IRBuilderBase &b, Value *start,
                                   const WgmmaOperand &op) {
  Value *addr = b.CreateAnd(b.CreateLShr(start, 4), b.getInt32(0x3fff));
  return b.CreateOr(addr, b.getInt32((op.leadingBytes >> 4) << 16));
}

Value *fmhajit::wgmmaDescriptorAt(IRBuilderBase &b, Value *low,
                                  unsigned byteOffset, const WgmmaOperand &op) {
  assert(byteOffset % 16 == 0 && "descriptors address 16-byte units");
  unsigned mode = op.swizzleBytes == 128 ? 1 : op.swizzleBytes == 64 ? 2 : 3;
  uint64_t high = (op.strideBytes() >> 4) | (mode << 30);
  Value *word = b.CreateAdd(low, b.getInt32(byteOffset >> 4));
  return b.CreateOr(b.CreateZExt(word, b.getInt64Ty()), b.getInt64(high << 32));
}

Value *fmhajit::swizzledOffset(IRBuilderBase &b, Value *row, Value *col,
                               unsigned rows, unsigned slabBytes,
                               unsigned elementBytes) {
  unsigned slabElements = slabBytes / elementBytes;
  unsigned chunkElements = 16 / elementBytes;
  Value *slab = b.CreateUDiv(col, b.getInt32(slabElements));
  Value *inSlab = b.CreateURem(col, b.getInt32(slabElements));
  Value *chunk = b.CreateUDiv(inSlab, b.getInt32(chunkElements));
  Value *rowBytes = b.CreateMul(row, b.getInt32(slabBytes));
  Value *pattern =
      b.CreateAnd(b.CreateLShr(rowBytes, 7), b.getInt32(slabBytes / 16 - 1));
  Value *offset = b.CreateAdd(
      b.CreateAdd(b.CreateMul(slab, b.getInt32(rows * slabBytes)), rowBytes),
      b.CreateShl(b.CreateXor(chunk, pattern), 4));
  Value *inChunk = b.CreateMul(b.CreateURem(inSlab, b.getInt32(chunkElements)),
                               b.getInt32(elementBytes));
  return b.CreateAdd(offset, inChunk);
}

Value *fmhajit::wgmmaDescriptorBase(IRBuilderBase &b, Value *address,
                                    Value *extra, const WgmmaOperand &op) {
  Value *start = b.CreatePtrToInt(address, b.getInt32Ty());
  if (extra)
    start = b.CreateAdd(start, extra);
  auto *copy =
      InlineAsm::get(FunctionType::get(b.getInt32Ty(), {b.getInt32Ty()}, false),
                     "mov.b32 $0, $1;", "=r,r", /*hasSideEffects=*/true);
  return b.CreateCall(copy, {wgmmaDescriptorLow(b, start, op)});
}

unsigned fmhajit::kMajorStepOffset(const WgmmaOperand &op, unsigned rows,
                                   unsigned kk) {
  unsigned stepBytes = 32 * kk;
  return stepBytes / op.swizzleBytes * rows * op.swizzleBytes +
         stepBytes % op.swizzleBytes;
}

void fmhajit::emitWgmmaFence(IRBuilderBase &b) {
  b.CreateIntrinsic(Intrinsic::nvvm_wgmma_fence_sync_aligned, {});
}

void fmhajit::emitWgmmaCommit(IRBuilderBase &b) {
  b.CreateIntrinsic(Intrinsic::nvvm_wgmma_commit_group_sync_aligned, {});
}

namespace {
/// "{$first, ..., $(first + count - 1)}"
std::string operandList(unsigned first, unsigned count) {
  std::string s = "{";
  for (unsigned i = 0; i < count; ++i)
    s += (i ? ", $" : "$") + std::to_string(first + i);
  return s + "}";
}

/// Calls \p text with \p outs fp32 outputs, then \p ins inputs of the given
/// constraints, then (if \p tied) the outputs' old values tied to them;
/// returns the outputs.
SmallVector<Value *, 128> callTied(IRBuilderBase &b, const std::string &text,
                                   unsigned outs, ArrayRef<Value *> ins,
                                   ArrayRef<StringRef> inConstraints,
                                   ArrayRef<Value *> tied) {
  std::string constraints;
  for (unsigned i = 0; i < outs; ++i)
    constraints += (i ? ",=f" : "=f");
  SmallVector<Value *, 160> args(ins);
  SmallVector<Type *, 160> argTypes;
  for (unsigned i = 0; i < ins.size(); ++i) {
    constraints += "," + inConstraints[i].str();
    argTypes.push_back(ins[i]->getType());
  }
  for (unsigned i = 0; i < tied.size(); ++i) {
    constraints += "," + std::to_string(i);
    args.push_back(tied[i]);
    argTypes.push_back(tied[i]->getType());
  }
  SmallVector<Type *, 128> outTypes(outs, b.getFloatTy());
  Type *ret =
      outs == 1 ? outTypes[0] : StructType::get(b.getContext(), outTypes);
  auto *asmFn = InlineAsm::get(FunctionType::get(ret, argTypes, false), text,
                               constraints, /*hasSideEffects=*/true);
  CallInst *call = b.CreateCall(asmFn, args);
  call->addFnAttr(Attribute::Convergent);
  SmallVector<Value *, 128> out;
  for (unsigned i = 0; i < outs; ++i)
    out.push_back(outs == 1 ? call : b.CreateExtractValue(call, i));
  return out;
}

const char *typeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F8E4M3:
    return "e4m3";
  case DType::F8E5M2:
    return "e5m2";
  default:
    llvm_unreachable("wgmma multiplies 16-bit and 8-bit types");
  }
}

/// "wgmma...m64n<N>k<K>.f32.<a>.<b> ": k16 for 16-bit types, k32 for fp8.
std::string mmaPrefix(DType a, DType b, unsigned n) {
  unsigned k = isFp8(a) ? 32 : 16;
  return "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" +
         std::to_string(k) + ".f32." + typeName(a) + "." + typeName(b) + " ";
}

/// The trailing immediates: scale-a and scale-b 1, then the transposes,
/// which only 16-bit types have (8-bit operands are always K-major): A's
/// where A is in shared memory, and B's.
std::string immediates(DType a, bool sharedA, bool transposeA,
                       bool transposeB) {
  assert((!isFp8(a) || !(transposeA || transposeB)) && "fp8 is K-major");
  if (isFp8(a))
    return "1, 1;";
  std::string text = "1, 1, ";
  if (sharedA)
    text += transposeA ? "1, " : "0, ";
  return text + (transposeB ? "1;" : "0;");
}
} // namespace

SmallVector<Value *, 128>
fmhajit::emitWgmmaShared(IRBuilderBase &b, DType dtype, ArrayRef<Value *> acc,
                         bool accumulate, Value *descA, Value *descB,
                         bool transposeB, bool transposeA) {
  unsigned outs = acc.size();
  std::string text =
      mmaPrefix(dtype, dtype, 2 * outs) + operandList(0, outs) + ", $" +
      std::to_string(outs) + ", $" + std::to_string(outs + 1) + ", $" +
      std::to_string(outs + 2) + ", " +
      immediates(dtype, /*sharedA=*/true, transposeA, transposeB);
  return callTied(b, text, outs, {descA, descB, b.getInt1(accumulate)},
                  {"l", "l", "b"}, accumulate ? acc : ArrayRef<Value *>());
}

SmallVector<Value *, 128> fmhajit::emitWgmmaRegisters(
    IRBuilderBase &b, DType typeA, DType typeB, ArrayRef<Value *> acc,
    bool accumulate, ArrayRef<Value *> a, Value *descB, bool transposeB) {
  assert(a.size() == 4 && "an m64 A fragment is four registers a lane");
  assert(isFp8(typeA) == isFp8(typeB) && "fp8 multiplies only fp8");
  unsigned outs = acc.size();
  std::string text = mmaPrefix(typeA, typeB, 2 * outs) + operandList(0, outs) +
                     ", " + operandList(outs, 4) + ", $" +
                     std::to_string(outs + 4) + ", $" +
                     std::to_string(outs + 5) + ", " +
                     immediates(typeA, /*sharedA=*/false, false, transposeB);
  SmallVector<Value *, 6> ins(a);
  ins.push_back(descB);
  ins.push_back(b.getInt1(accumulate));
  return callTied(b, text, outs, ins, {"r", "r", "r", "r", "l", "b"},
                  accumulate ? acc : ArrayRef<Value *>());
}

SmallVector<Value *, 128>
fmhajit::emitKMajorProducts(IRBuilderBase &b, DType dtype,
                            const WgmmaOperand &op, Value *aBase,
                            unsigned aRows, Value *bBase, unsigned bRows,
                            unsigned steps, unsigned outs) {
  SmallVector<Value *, 128> sums(outs, PoisonValue::get(b.getFloatTy()));
  emitWgmmaFence(b);
  for (unsigned kk = 0; kk < steps; ++kk)
    sums = emitWgmmaShared(
        b, dtype, sums, /*accumulate=*/kk > 0,
        wgmmaDescriptorAt(b, aBase, kMajorStepOffset(op, aRows, kk), op),
        wgmmaDescriptorAt(b, bBase, kMajorStepOffset(op, bRows, kk), op),
        /*transposeB=*/false);
  emitWgmmaCommit(b);
  return sums;
}

SmallVector<Value *, 128> fmhajit::emitWgmmaWait(IRBuilderBase &b,
                                                 unsigned pending,
                                                 ArrayRef<Value *> live) {
  std::string text =
      "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";";
  return callTied(b, text, live.size(), {}, {}, live);
}
