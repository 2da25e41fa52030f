//===- NvptxValuePretranspose.cpp - V^T written once a call, for fp8 wgmma ===//
#include "ir/targets/NvptxValuePretranspose.h"
#include "ir/KernelAbi.h"
#include "ir/KernelAbiIR.h"
#include "ir/Loops.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace fmhajit;
using namespace llvm;

namespace {
/// 4-byte words of a staged V^T row: 64 keys and one word of padding, so
/// that rows 4 apart start 4 banks apart.
constexpr unsigned kRowWords = kPretransposeKeys / 4 + 1;
static_assert(pretransposeSharedBytes(1) == 4 * kRowWords,
              "KernelAbi.h sizes the rows the pass stages");

class PretransposeEmitter {
public:
  PretransposeEmitter(GpuTargetInfo &target, IRBuilderBase &b, Value *params)
      : target(target), spec(target.kernelSpec()), b(b), p(b, params),
        dv(spec.headDimV()) {}

  void emit();

private:
  Value *c32(uint64_t v) { return b.getInt32(unsigned(v)); }
  Value *c64(uint64_t v) { return b.getInt64(v); }
  Value *wide(Value *v) { return b.CreateSExt(v, b.getInt64Ty()); }
  /// The 4-byte word at \p byteOffset (i64) from global pointer \p base.
  Value *globalWord(Value *base, Value *byteOffset) {
    Value *global = b.CreateAddrSpaceCast(base, PointerType::get(ctx(), 1));
    return b.CreateInBoundsGEP(b.getInt8Ty(), global, byteOffset);
  }
  Value *sharedWord(Value *index) {
    return b.CreateInBoundsGEP(b.getInt32Ty(), smem, index);
  }
  LLVMContext &ctx() { return b.getContext(); }
  /// The four words of V^T rows 4q..4q+3 (columns) from \p rows, four keys'
  /// words of those columns: out[j] holds byte j of each, in key order.
  SmallVector<Value *, 4> transposeBytes(ArrayRef<Value *> rows);
  void stageBlock(Value *headBase, Value *key0, Value *seqlenK);
  void writeBlock(Value *rowsBase, Value *keysPadded, Value *key0);

  GpuTargetInfo &target;
  const KernelSpec &spec;
  IRBuilderBase &b;
  ArgsReader p;
  unsigned dv;
  Value *smem = nullptr, *thread = nullptr;
};
} // namespace

SmallVector<Value *, 4>
PretransposeEmitter::transposeBytes(ArrayRef<Value *> rows) {
  auto *bytes = FixedVectorType::get(b.getInt8Ty(), 4);
  SmallVector<Value *, 4> v;
  for (Value *row : rows)
    v.push_back(b.CreateBitCast(row, bytes));
  Value *low = b.CreateShuffleVector(v[0], v[1], {0, 1, 2, 3, 4, 5, 6, 7});
  Value *high = b.CreateShuffleVector(v[2], v[3], {0, 1, 2, 3, 4, 5, 6, 7});
  SmallVector<Value *, 4> out;
  for (int j = 0; j < 4; ++j)
    out.push_back(b.CreateBitCast(
        b.CreateShuffleVector(low, high, {j, 4 + j, 8 + j, 12 + j}),
        b.getInt32Ty()));
  return out;
}

// Step 1. A warp item is one group of 16 keys by 32 columns: lane (q, t)
// takes column quad q (of 8) and keys {2t, 2t+1, 2t+8, 2t+9} of the group,
// whose bytes are V^T's word t of the group in each of the quad's 4 rows.
// Keys past seqlenK read as zeros (the clamped address stays inside V).
void PretransposeEmitter::stageBlock(Value *headBase, Value *key0,
                                     Value *seqlenK) {
  Value *lane = b.CreateAnd(thread, c32(31));
  Value *t = b.CreateAnd(lane, c32(3)), *quadInItem = b.CreateLShr(lane, 2);
  Value *rowStride = p.stride(kVStrides, 1, "v.row");
  unsigned items = 4 * (dv / 32), warps = kPretransposeThreads / 32;
  Value *warp = b.CreateLShr(thread, 5);
  emitFor(b, warp, c32(items), c32(warps), "vt.stage", [&](Value *item) {
    Value *group = b.CreateAnd(item, c32(3));
    Value *quad =
        b.CreateAdd(b.CreateShl(b.CreateLShr(item, 2), 3), quadInItem);
    Value *first = b.CreateAdd(b.CreateAdd(key0, b.CreateShl(group, 4)),
                               b.CreateShl(t, 1));
    SmallVector<Value *, 4> rows;
    for (unsigned offset : {0u, 1u, 8u, 9u}) {
      Value *key = b.CreateAdd(first, c32(offset));
      Value *inside = b.CreateICmpSLT(key, seqlenK);
      Value *at = b.CreateAdd(
          b.CreateMul(wide(b.CreateSelect(inside, key, c32(0))), rowStride),
          wide(b.CreateShl(quad, 2)));
      Value *word = b.CreateAlignedLoad(b.getInt32Ty(),
                                        globalWord(headBase, at), Align(4));
      rows.push_back(b.CreateSelect(inside, word, c32(0)));
    }
    SmallVector<Value *, 4> columns = transposeBytes(rows);
    Value *wordInRow = b.CreateAdd(b.CreateShl(group, 2), t);
    for (unsigned j = 0; j < 4; ++j) {
      Value *row = b.CreateAdd(b.CreateShl(quad, 2), c32(j));
      b.CreateAlignedStore(
          columns[j],
          sharedWord(b.CreateAdd(b.CreateMul(row, c32(kRowWords)), wordInRow)),
          Align(4));
    }
  });
}

// Step 2. 16 threads a row: each row's 64 keys are 64 contiguous bytes of
// V^T in global memory.
void PretransposeEmitter::writeBlock(Value *rowsBase, Value *keysPadded,
                                     Value *key0) {
  unsigned rowWords = kPretransposeKeys / 4;
  emitFor(b, thread, c32(dv * rowWords), c32(kPretransposeThreads), "vt.write",
          [&](Value *index) {
            Value *row = b.CreateLShr(index, 4), *word = b.CreateAnd(index, 15);
            Value *value = b.CreateAlignedLoad(
                b.getInt32Ty(),
                sharedWord(b.CreateAdd(b.CreateMul(row, c32(kRowWords)), word)),
                Align(4));
            Value *at =
                b.CreateAdd(b.CreateMul(wide(row), keysPadded),
                            wide(b.CreateAdd(key0, b.CreateShl(word, 2))));
            b.CreateAlignedStore(value, globalWord(rowsBase, at), Align(4));
          });
}

// Block -> (sequence, K/V head, 64 keys), keys fastest. The kernel after
// the pass may launch once every block of it has begun, and waits for the
// pass in place (waitsForKernelBefore): its blocks then take SMs as the
// pass's last blocks leave them, not after the pass's grid has ended.
void PretransposeEmitter::emit() {
  if (findArch(spec.target)->gridDependency)
    b.CreateIntrinsic(Intrinsic::nvvm_griddepcontrol_launch_dependents, {});
  smem = target.sharedMemory(b, pretransposeSharedBytes(dv));
  thread = target.threadId(b);
  Value *seqlenK = p.get(kSeqlenK, "seqlenK");
  Value *headsKv = p.get(kHeadsKv, "headsKv");
  Value *keyBlocks = b.CreateUDiv(
      b.CreateAdd(seqlenK, c32(kPretransposeKeys - 1)), c32(kPretransposeKeys));
  Value *block = target.blockId(b);
  Value *key0 =
      b.CreateMul(b.CreateURem(block, keyBlocks), c32(kPretransposeKeys));
  Value *pair = b.CreateUDiv(block, keyBlocks); // batch * headsKv + head
  Value *head = b.CreateURem(pair, headsKv),
        *batch = b.CreateUDiv(pair, headsKv);
  Value *headBase = b.CreateInBoundsGEP(
      b.getInt8Ty(), p.get(kV, "v"),
      b.CreateAdd(b.CreateMul(wide(batch), p.stride(kVStrides, 0, "v.batch")),
                  b.CreateMul(wide(head), p.stride(kVStrides, 2, "v.head"))));
  stageBlock(headBase, key0, seqlenK);
  target.barrier(b);
  Value *keysPadded = b.CreateMul(wide(keyBlocks), c64(kPretransposeKeys));
  Value *rowsBase = b.CreateInBoundsGEP(
      b.getInt8Ty(), p.get(kValuesT, "valuesT"),
      b.CreateMul(b.CreateMul(wide(pair), c64(dv)), keysPadded));
  writeBlock(rowsBase, keysPadded, key0);
}

void fmhajit::emitValuePretransposeKernel(GpuTargetInfo &target, Module &m) {
  LLVMContext &ctx = m.getContext();
  auto *type = FunctionType::get(Type::getVoidTy(ctx),
                                 {PointerType::get(ctx, 0)}, false);
  Function *fn =
      Function::Create(type, Function::ExternalLinkage,
                       pretransposeSymbol(encodeName(target.kernelSpec())), m);
  fn->setCallingConv(CallingConv::PTX_Kernel);
  fn->addParamAttr(0, Attribute::getWithByValType(ctx, kernelArgsType(ctx)));
  fn->addParamAttr(0, Attribute::getWithAlignment(ctx, Align(8)));
  fn->addFnAttr(Attribute::NoUnwind);
  fn->addFnAttr("nvvm.maxntid", std::to_string(kPretransposeThreads));
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", fn));
  PretransposeEmitter(target, b, fn->getArg(0)).emit();
  b.CreateRetVoid();
}
