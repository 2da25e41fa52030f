//===- RowSoftmax.cpp - The peer's softmax step, in plain C++ -------------===//
//
// Plain loops over std::exp, written so the compiler vectorizes them: this
// file is built with -fno-math-errno -fveclib=libmvec (glibc's vector expf),
// the reductions allow reassociation, and each function is cloned for
// AVX-512, AVX2 and baseline x86-64, picked at load time for this CPU. A
// peer held back by scalar code would flatter fmhajit.
//
//===----------------------------------------------------------------------===//
#include "bench/host/RowSoftmax.h"
#include <algorithm>
#include <cmath>
#include <limits>

using namespace fmhajit::bench;

#define FMHAJIT_BENCH_CLONES                                                   \
  __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))

FMHAJIT_BENCH_CLONES
static void softmaxRow(float *row, int64_t n) {
#pragma clang fp reassociate(on)
  float rowMax = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j)
    rowMax = std::fmax(rowMax, row[j]);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - rowMax);
    sum += row[j];
  }
  float inverse = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j)
    row[j] *= inverse;
}

void fmhajit::bench::softmaxRows(float *s, int64_t rows, int64_t cols,
                                 int64_t firstRow, bool causal) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = s + r * cols;
    int64_t visible = causal ? std::min(cols, firstRow + r + 1) : cols;
    softmaxRow(row, visible);
    std::fill(row + visible, row + cols, 0.0f);
  }
}
