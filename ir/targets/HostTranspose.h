//===- HostTranspose.h - A square block of vectors transposed in registers ===//
//
// Host Query tiles are stored transposed (HostTileOps.cpp). Scattering each
// loaded element to its own address costs an extract and a store per element
// (vextractps to a 768-byte stride at bm=192); transposing L rows of L lanes
// in registers costs log2(L) shuffles per vector and stores whole vectors.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// The transpose of the square block whose row i is \p rows[i] (L vectors of
/// L elements, L a power of two): element j of result i is element i of
/// rows[j]. log2(L) rounds of interleaves, each rotating the bits of
/// (vector, lane) left by one:
///   y[2i]   = shufflevector x[i], x[i + L/2], <0, L, 1, L+1, ...>     (low)
///   y[2i+1] = shufflevector x[i], x[i + L/2], <L/2, L+L/2, ...>       (high)
llvm::SmallVector<llvm::Value *, 16>
transposeSquare(llvm::IRBuilderBase &b, llvm::ArrayRef<llvm::Value *> rows);

} // namespace fmhajit
