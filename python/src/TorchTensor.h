//===- TorchTensor.h - A PyTorch tensor read without DLPack ---------------===//
//
// Exporting a tensor through DLPack (Tensor.__dlpack__) runs a Python
// method's checks and allocates a managed tensor: microseconds per array,
// and a call passes four or more. For a plain torch.Tensor (that exact
// type) in host or CUDA memory, of float32, float16, bfloat16 or int32,
// strided, not requiring grad, the same view comes from its attributes:
// data_ptr(), shape, stride(), dtype, is_cuda / is_cpu and get_device().
// The view keeps the tensor alive, as the managed tensor would.
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
//===----------------------------------------------------------------------===//
#pragma once

#include "python/src/ArrayView.h"
#include <optional>

namespace fmhajit::python {

/// \p array as importArray(array, what, stream) would see it, when it is a
/// tensor the rules above read directly; else std::nullopt (and no Python
/// error set).
std::optional<ArrayView> readTorchTensor(pybind11::handle array,
                                         const char *what,
                                         std::optional<intptr_t> stream);

} // namespace fmhajit::python
