//===- LaidOutTensor.h - A host tensor in a caller's layout ---------------===//
//
// The public API takes tensors at any element strides. A LaidOutTensor is
// the host memory those strides span (padding included) and gathers its
// elements into the packed [batch, seq, heads, dim] order (or [total,
// heads, dim] under varlen) the float64 references read.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/TensorLayouts.h"
#include "runtime/numerics/HostTensor.h"
#include <vector>

namespace fmhajit::harness {

struct LaidOutTensor {
  LaidOutTensor(DType type, const TensorShape &shape,
                const TensorStrides &strides)
      : shape(shape), strides(strides),
        data(type, size_t(spanElements(shape, strides))) {}

  /// The elements in packed order.
  std::vector<float> packed() const {
    std::vector<float> out;
    out.reserve(size_t(shape.batch * shape.seq * shape.heads * shape.dim));
    for (int64_t b = 0; b < shape.batch; ++b)
      for (int64_t s = 0; s < shape.seq; ++s)
        for (int64_t h = 0; h < shape.heads; ++h)
          for (int64_t x = 0; x < shape.dim; ++x)
            out.push_back(data.get(size_t(b * strides.batch + s * strides.row +
                                          h * strides.head + x)));
    return out;
  }

  TensorShape shape;
  TensorStrides strides;
  HostTensor data;
};

} // namespace fmhajit::harness
