//===- RowSoftmax.h - The peer's softmax step, in plain C++ ---------------===//
#pragma once

#include <cstdint>

namespace fmhajit::bench {

/// Replaces each of \p rows rows of \p s (row r at s + r * cols) with its
/// softmax: max, exp(s - max), sum, divide. Under \p causal, row r is query
/// firstRow + r and sees keys j <= firstRow + r only; the masked entries
/// become exactly 0, as exp(-inf) would make them.
void softmaxRows(float *s, int64_t rows, int64_t cols, int64_t firstRow,
                 bool causal);

} // namespace fmhajit::bench
