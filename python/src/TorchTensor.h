//===- TorchTensor.h - PyTorch tensors without DLPack ---------------------===//
//
// Exporting a tensor through DLPack (Tensor.__dlpack__) runs a Python
// method's checks and allocates a managed tensor: microseconds per array,
// and a call passes four or more. For a plain torch.Tensor (that exact
// type) in host or CUDA memory, of float32, float16, bfloat16 or int32,
// strided, not requiring grad, the same view comes from its attributes:
// data_ptr(), shape, stride(), dtype, is_cuda / is_cpu and get_device(),
// each read through the descriptor torch.Tensor holds. The view keeps the
// tensor alive, as the managed tensor would.
//
// Everything else goes through DLPack as before, so its messages are
// unchanged: subclasses, other layouts, devices and dtypes, tensors that
// require grad (DLPack refuses them), GPU tensors of a ROCm build, and CUDA
// tensors whose producer must order its work before a stream (an export
// stream other than -1).
//
// Like torch's DLPack export (since 1.13; later versions only where the
// strides are not already C-contiguous ones), a dim of size 1 reads stride
// 1: its stride is never stepped over, so only the plan's key can tell.
//
// A plain tensor q's output can be made here too: its view is q's, packed,
// at the new tensor's address, so that a call that makes its output reads
// one attribute of it instead of eight (and Python reads no shape).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "python/src/ArrayView.h"
#include <optional>

namespace fmhajit::python {

/// Fills \p view as importArray(array, view.what, stream) would, in place
/// (a call reads four arrays or more), and returns true when \p array is a
/// tensor the rules above read directly; else returns false with no Python
/// error set, and DLPack sets the view's fields again. \p grad
/// NotRequired skips the read of requires_grad (importArrayInto).
bool readTorchTensor(pybind11::handle array, std::optional<intptr_t> stream,
                     ArrayView &view, GradKnown grad = GradKnown::No);

/// Whether \p array is a plain torch.Tensor (that exact type).
bool isPlainTensor(pybind11::handle array);

/// Whether \p tensor, a plain tensor, is on a CUDA device (is_cuda; false
/// where that cannot be read).
bool isCudaTensor(pybind11::handle tensor);

/// Whether \p tensor, a plain tensor, requires grad (true where that
/// cannot be read): DLPack refuses such tensors, and so does the reading
/// of one through the exchange API (ExchangeApi.h), which leaves it to
/// DLPack.
bool requiresGrad(pybind11::handle tensor);

/// A new output for \p q, a plain tensor imported as \p qView: packed, of
/// q's dtype and device and q's shape with head_dim \p headDimV, as
/// q.new_empty(shape) makes it (torch.empty_like where the head dims
/// agree: it costs less). Its view goes into \p view: q's, where q was read
/// directly; else importArray's.
pybind11::object newTorchOutput(pybind11::handle q, const ArrayView &qView,
                                int64_t headDimV,
                                std::optional<intptr_t> stream,
                                ArrayView &view);

} // namespace fmhajit::python
