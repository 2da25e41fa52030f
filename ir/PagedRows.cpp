//===- PagedRows.cpp - K/V rows of a paged cache, through its block table -===//
#include "ir/PagedRows.h"

using namespace fmhajit;
using namespace llvm;

Value *PagedRows::operator()(IRBuilderBase &b, Value *r) const {
  Value *j = b.CreateAdd(j0, b.CreateTrunc(r, b.getInt32Ty()));
  Value *slot = b.CreateZExt(b.CreateLShr(j, log2Page), b.getInt64Ty());
  Value *page = b.CreateLoad(b.getInt32Ty(),
                             b.CreateInBoundsGEP(b.getInt32Ty(), table, slot));
  Value *mask =
      b.CreateSub(b.CreateShl(b.getInt32(1), log2Page), b.getInt32(1));
  Value *offset = b.CreateZExt(b.CreateAnd(j, mask), b.getInt64Ty());
  Value *elements =
      b.CreateAdd(b.CreateMul(b.CreateSExt(page, b.getInt64Ty()), pageStride),
                  b.CreateMul(offset, rowStride));
  return b.CreateInBoundsGEP(elem, head, elements);
}

void PagedRows::prefetch(IRBuilderBase &b, TargetInfo &target, Value *j,
                         Value *keys, unsigned bn) const {
  constexpr unsigned kSlotsPerLine = 128 / sizeof(int32_t);
  Value *first = b.CreateLShr(j, log2Page, "table.first");
  Value *lastKey = b.CreateSub(b.CreateAdd(j, keys), b.getInt32(1));
  Value *last = b.CreateLShr(lastKey, log2Page, "table.last");
  for (unsigned k = 0; k <= bn / kSlotsPerLine; ++k) {
    Value *slot =
        k == 0 ? first
               : b.CreateBinaryIntrinsic(
                     Intrinsic::umin,
                     b.CreateAdd(first, b.getInt32(k * kSlotsPerLine)), last);
    target.prefetch(b, b.CreateInBoundsGEP(b.getInt32Ty(), table,
                                           b.CreateZExt(slot, b.getInt64Ty())));
  }
}
