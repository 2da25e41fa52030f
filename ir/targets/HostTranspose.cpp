//===- HostTranspose.cpp - A square block of vectors transposed -----------===//
#include "ir/targets/HostTranspose.h"
#include "llvm/ADT/bit.h"

using namespace fmhajit;
using namespace llvm;

// Element l of vector v sits at bits (v, l) of a 2n-bit index, L = 2^n. One
// round sends it to vector 2(v mod L/2) + (l >= L/2), lane 2(l mod L/2) +
// (v >= L/2): the index rotated left by one bit. n rounds rotate it by n,
// to (l, v), which is the transpose.
SmallVector<Value *, 16> fmhajit::transposeSquare(IRBuilderBase &b,
                                                  ArrayRef<Value *> rows) {
  unsigned lanes = rows.size();
  assert(isPowerOf2_32(lanes) &&
         cast<FixedVectorType>(rows[0]->getType())->getNumElements() == lanes &&
         "transposeSquare takes L vectors of L elements, L a power of two");
  SmallVector<int, 16> low, high;
  for (unsigned j = 0; j < lanes / 2; ++j) {
    low.append({int(j), int(j + lanes)});
    high.append({int(j + lanes / 2), int(j + lanes + lanes / 2)});
  }
  SmallVector<Value *, 16> x(rows.begin(), rows.end()), y(lanes);
  for (unsigned round = 0; round < Log2_32(lanes); ++round) {
    for (unsigned i = 0; i < lanes / 2; ++i) {
      y[2 * i] = b.CreateShuffleVector(x[i], x[i + lanes / 2], low);
      y[2 * i + 1] = b.CreateShuffleVector(x[i], x[i + lanes / 2], high);
    }
    x.swap(y);
  }
  return x;
}
