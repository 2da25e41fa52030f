//===- TensorLayouts.cpp - The public tensor layouts as element strides ---===//
#include "runtime/api/TensorLayouts.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include <algorithm>

using namespace fmhajit;
using api::Layout;
using llvm::Twine;

TensorStrides fmhajit::resolveStrides(const api::TensorLayout &layout,
                                      const TensorShape &s) {
  switch (layout.layout) {
  case Layout::BSHD:
    return {s.varlen ? 0 : s.seq * s.heads * s.dim, s.heads * s.dim, s.dim};
  case Layout::BHSD:
    return {s.varlen ? 0 : s.heads * s.seq * s.dim, s.dim, s.seq * s.dim};
  case Layout::Strided:
    return {s.varlen ? 0 : layout.batchStride, layout.seqStride,
            layout.headStride};
  }
  return {};
}

namespace {
struct Dim {
  int64_t stride, extent;
  const char *name;
};
} // namespace

// The dims a stride walks over, the contiguous last dim included.
static llvm::SmallVector<Dim, 4> dimsOf(const TensorShape &s,
                                        const TensorStrides &t) {
  llvm::SmallVector<Dim, 4> dims = {
      {1, s.dim, "dim"}, {t.row, s.seq, "seq"}, {t.head, s.heads, "head"}};
  if (!s.varlen)
    dims.push_back({t.batch, s.batch, "batch"});
  return dims;
}

// An output may not map two indices to one element: sorted by stride, each
// dim must step over everything the smaller dims span (PyTorch's
// "internal overlap" rule). Dims of extent 1 never step.
static void checkNoOverlap(llvm::StringRef name, const TensorShape &shape,
                           const TensorStrides &strides, ErrorList &errors) {
  llvm::SmallVector<Dim, 4> dims = dimsOf(shape, strides);
  llvm::erase_if(dims, [](const Dim &d) { return d.extent <= 1; });
  llvm::sort(dims,
             [](const Dim &a, const Dim &b) { return a.stride < b.stride; });
  int64_t spanned = 1; // elements covered by the dims before
  for (const Dim &d : dims) {
    if (d.stride < spanned) {
      errors.add(ErrorKind::Usage,
                 "tensor " + name + ": the " + d.name + " stride " +
                     Twine(d.stride) +
                     " makes output elements overlap (the smaller dims span " +
                     Twine(spanned) +
                     " elements); use strides that give every "
                     "element its own address, e.g. Layout::BSHD");
      return;
    }
    spanned = d.stride * d.extent;
  }
}

void fmhajit::checkLayout(llvm::StringRef name, const api::TensorLayout &layout,
                          const TensorShape &shape, bool output,
                          ErrorList &errors) {
  if (layout.layout == Layout::Strided) {
    bool negative = layout.seqStride < 0 || layout.headStride < 0 ||
                    (!shape.varlen && layout.batchStride < 0);
    if (negative) {
      errors.add(ErrorKind::Usage,
                 "tensor " + name + " has a negative stride (" +
                     layoutName(layout) +
                     "): strides count elements forward, use >= 0");
      return;
    }
  }
  if (output)
    checkNoOverlap(name, shape, resolveStrides(layout, shape), errors);
}

int64_t fmhajit::spanElements(const TensorShape &shape,
                              const TensorStrides &strides) {
  int64_t last = 0;
  for (const Dim &d : dimsOf(shape, strides))
    last += (d.extent - 1) * d.stride;
  return last + 1;
}

unsigned fmhajit::rowAlignment(const TensorStrides &strides,
                               unsigned elementBytes, bool varlen) {
  unsigned align = 16;
  auto fit = [&](int64_t stride) {
    while (align > 1 && (stride * elementBytes) % align)
      align /= 2;
  };
  fit(strides.row);
  fit(strides.head);
  if (!varlen)
    fit(strides.batch);
  return align;
}

std::string fmhajit::layoutName(const api::TensorLayout &layout) {
  switch (layout.layout) {
  case Layout::BSHD:
    return "BSHD";
  case Layout::BHSD:
    return "BHSD";
  case Layout::Strided:
    return "strided(" + std::to_string(layout.batchStride) + "," +
           std::to_string(layout.seqStride) + "," +
           std::to_string(layout.headStride) + ")";
  }
  return "?";
}
