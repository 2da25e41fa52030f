//===- TensorLayouts.h - The public tensor layouts as element strides -----===//
//
// The public API names layouts (BSHD, BHSD) or takes element strides; the
// kernels read strides only (ir/KernelAbi.h). This file turns one into the
// other and refuses layouts a kernel cannot use: negative strides, and an
// output whose elements overlap (two threads would write one element).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include "ir/KernelAbi.h"
#include "runtime/numerics/Dropout.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace fmhajit {

/// The logical extents of one tensor: [batch, seq, heads, dim], or under
/// varlen [total, heads, dim] (batch 1, seq = total).
struct TensorShape {
  int64_t batch = 1, seq = 1, heads = 1, dim = 1;
  bool varlen = false;
};

/// The element strides of \p layout for a tensor of \p shape.
TensorStrides resolveStrides(const api::TensorLayout &layout,
                             const TensorShape &shape);

/// Adds one Usage error per problem with tensor \p name ("q", "o"...) laid
/// out as \p layout; \p output also refuses overlapping elements.
void checkLayout(llvm::StringRef name, const api::TensorLayout &layout,
                 const TensorShape &shape, bool output, ErrorList &errors);

/// Elements from the first to one past the last element the tensor
/// addresses: the size of a buffer that holds it.
int64_t spanElements(const TensorShape &shape, const TensorStrides &strides);

/// The largest power of two up to 16 dividing every byte offset between
/// rows, heads and batches (under varlen: rows and heads) of a tensor with
/// \p strides and \p elementBytes-byte elements: the alignment of each row
/// start relative to the base pointer.
unsigned rowAlignment(const TensorStrides &strides, unsigned elementBytes,
                      bool varlen);

/// "BSHD", "BHSD" or "strided(b,s,h)".
std::string layoutName(const api::TensorLayout &layout);

/// \p args with dropout's run-time arguments (p already checked to be in
/// [0, 1)): the Philox seed and offset, the threshold and 1 / (1 - p).
inline void setDropout(KernelArgs &args, const api::Dropout &d) {
  args.dropoutSeed = int64_t(d.seed);
  args.dropoutOffset = int32_t(d.offset);
  args.dropoutThreshold = int32_t(dropoutThreshold(d.p));
  args.dropoutScale = dropoutScale(d.p);
}

/// \p t's variant tensors (run() checked there are no more than the
/// variant reads, so at most kMaxVariantTensors) as the kernel's table;
/// slots past them null and 0.
inline VariantTensors variantTensorTable(const api::Tensors &t) {
  VariantTensors table{};
  for (size_t s = 0; s < t.variantTensors.size() && s < kMaxVariantTensors; ++s)
    table.slot[s] = {t.variantTensors[s].data, t.variantTensors[s].length};
  return table;
}

/// \p args with the caller's Q, K, V, O, LSE, bias and variant tensor
/// pointers from \p t, and its fp8 descale factors: Q's and K's fold into
/// the softmax scale, V's scales O (fp8 kernels only read vScale).
inline KernelArgs withTensorPointers(KernelArgs args, const api::Tensors &t) {
  args.q = t.q;
  args.k = t.k;
  args.v = t.v;
  args.o = t.o;
  args.lse = t.lse;
  args.bias = t.bias;
  args.variantTensors = variantTensorTable(t);
  args.scale *= t.descaleQ * t.descaleK;
  args.vScale = t.descaleV;
  setDropout(args, t.dropout);
  return args;
}

} // namespace fmhajit
