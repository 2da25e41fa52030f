//===- HostMicroKernel.cpp - The host product's register blocking --------===//
#include "ir/targets/HostMicroKernel.h"
#include "llvm/ADT/ArrayRef.h"

using namespace llvm;

unsigned fmhajit::vectorRegisters(unsigned lanes) {
  return lanes >= 16 ? 32 : 16;
}

unsigned fmhajit::blockColumns(unsigned vectors, unsigned lanes) {
  static const unsigned kWide[] = {4, 5, 3, 2, 1};
  static const unsigned kNarrow[] = {2, 1};
  bool wide = vectorRegisters(lanes) == 32;
  for (unsigned c :
       wide ? ArrayRef<unsigned>(kWide) : ArrayRef<unsigned>(kNarrow))
    if (vectors % c == 0)
      return c;
  return 1;
}

unsigned fmhajit::blockRows(unsigned M, unsigned C, unsigned lanes) {
  for (unsigned r : {6u, 4u, 2u})
    if (M % r == 0 && r * C + C + 1 <= vectorRegisters(lanes))
      return r;
  return 1;
}
