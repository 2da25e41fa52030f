//===- Rotary.cpp - Rotary position embedding: forms, tables, reference ---===//
#include "runtime/numerics/Rotary.h"
#include <cassert>
#include <cmath>

using namespace fmhajit;

llvm::StringRef fmhajit::rotaryFormName(RotaryForm form) {
  switch (form) {
  case RotaryForm::None:
    return "none";
  case RotaryForm::Interleaved:
    return "interleaved";
  case RotaryForm::Half:
    return "half";
  }
  return "none";
}

std::optional<RotaryForm> fmhajit::parseRotaryForm(llvm::StringRef name) {
  for (RotaryForm f :
       {RotaryForm::None, RotaryForm::Interleaved, RotaryForm::Half})
    if (rotaryFormName(f) == name)
      return f;
  return std::nullopt;
}

RotaryTables fmhajit::makeRotaryTables(int64_t positions, int64_t dim,
                                       double base) {
  assert(dim > 0 && dim % 2 == 0 && "rotary dims come in pairs");
  RotaryTables t;
  t.positions = positions;
  t.dim = dim;
  int64_t half = dim / 2;
  t.cos.resize(positions * half);
  t.sin.resize(positions * half);
  for (int64_t pos = 0; pos < positions; ++pos)
    for (int64_t k = 0; k < half; ++k) {
      double angle = static_cast<double>(pos) *
                     std::pow(base, -2.0 * static_cast<double>(k) /
                                        static_cast<double>(dim));
      t.cos[pos * half + k] = static_cast<float>(std::cos(angle));
      t.sin[pos * half + k] = static_cast<float>(std::sin(angle));
    }
  return t;
}

std::vector<double> fmhajit::rotateRowReference(llvm::ArrayRef<float> x,
                                                RotaryForm form,
                                                const RotaryTables &tables,
                                                int64_t pos) {
  std::vector<double> y(x.begin(), x.end());
  if (form == RotaryForm::None)
    return y;
  assert(pos < tables.positions &&
         tables.dim <= static_cast<int64_t>(x.size()) &&
         "position or rotary dim outside the tables");
  int64_t half = tables.dim / 2;
  for (int64_t k = 0; k < half; ++k) {
    int64_t e0 = form == RotaryForm::Interleaved ? 2 * k : k;
    int64_t e1 = form == RotaryForm::Interleaved ? 2 * k + 1 : k + half;
    double c = tables.cos[pos * half + k], s = tables.sin[pos * half + k];
    y[e0] = x[e0] * c - static_cast<double>(x[e1]) * s;
    y[e1] = x[e1] * c + static_cast<double>(x[e0]) * s;
  }
  return y;
}
