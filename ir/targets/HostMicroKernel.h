//===- HostMicroKernel.h - The host product's register blocking ----------===//
//
// The host's products run a micro-kernel that keeps an R x C block of
// vector accumulators in registers (HostTileOps.cpp); these choose R and C
// for a target's vector width.
//
//===----------------------------------------------------------------------===//
#ifndef FMHAJIT_IR_TARGETS_HOSTMICROKERNEL_H
#define FMHAJIT_IR_TARGETS_HOSTMICROKERNEL_H

namespace fmhajit {

/// The vector registers of a target with \p lanes floats per vector: 32
/// with AVX-512, 16 below it.
unsigned vectorRegisters(unsigned lanes);

/// Columns of accumulator vectors per micro-kernel block, the first of a
/// preference list that divides the tile's \p vectors: 4 columns of 4+ rows
/// fill 32 registers, 2 columns 16.
unsigned blockColumns(unsigned vectors, unsigned lanes);

/// Rows of a micro-kernel block over \p M rows with \p C columns: the most
/// (up to 6) that divide M and keep R*C accumulators, the C streamed vectors
/// and one broadcast in registers. More rows load each streamed vector for
/// more FMAs: O += P V's 6x4 block at bm=192 measured 3% faster end to end
/// than 4x4 (AVX-512); S's 64 key rows keep 4x4, which beat 8x2 and 4x6.
unsigned blockRows(unsigned M, unsigned C, unsigned lanes);

} // namespace fmhajit

#endif
