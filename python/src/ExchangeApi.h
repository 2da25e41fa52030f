//===- ExchangeApi.h - Arrays through DLPack's C exchange API -------------===//
//
// An array type may offer DLPack's C exchange API (DLPackExchange.h): C
// functions that read one of its arrays into a DLTensor on the caller's
// stack, allocate a new array, and name the current work stream. Where q's
// type has it (torch.Tensor; PyTorch 2.11 has DLPack 1.3's), a call reads
// its arrays and finds its stream through those functions, without a
// Python attribute read or a __dlpack__ call, and takes a CUDA plan's
// workspace from the allocator.
//
// Outputs are not made by the allocator. PyTorch's turns the new tensor
// into a Python one by wrapping its memory (from_blob, as from_dlpack
// does): measured on an H100 with PyTorch 2.11 it saved 0.18 of the 1.65 us
// that torch.empty_like takes, and the tensor it gives cannot be resized
// and ignores record_stream (its memory is not the caching allocator's
// block), which code using the output on another stream relies on. A
// plain tensor's out is made as before (TorchTensor.h); the workspace is
// never seen by the caller.
//
// Only a type that defines the API itself is read this way, not one that
// inherits it: a subclass may change what its instances hold or how they
// are read (torch's FakeTensor, a __torch_function__ override), so
// subclasses keep the path they had (TorchTensor.h, then __dlpack__). So
// does every array the API cannot describe or fmhajit reads otherwise (a
// tensor that requires grad, a device other than the host or CUDA, a dtype
// fmhajit does not read, more than 4 dims, a CUDA array whose producer is
// asked to order its work before another stream): importArray then reads it
// as before, with its messages.
//
// The functions do not synchronize: a CUDA call through them runs on the
// producer's current work stream of q's device (torch's current stream),
// so arrays read without synchronizing are ordered before it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "python/src/ArrayView.h"
#include "python/src/DLPackExchange.h"
#include <optional>
#include <pybind11/pybind11.h>

namespace fmhajit::python {

/// The exchange API that \p array's type defines itself, found once per
/// type (the GIL serializes every caller); null where it defines none, or
/// one whose major version is not DLPack 1's.
const dlx::ExchangeApi *exchangeApiOf(pybind11::handle array);

/// Fills \p view as importArray(array, view.what, exportStream) would and
/// returns true, where \p api reads \p array and fmhajit reads it this way
/// (above); else returns false with no Python error set. A CUDA array is
/// read only where \p exportStream is -1 (the call runs on the producer's
/// current stream). \p grad NotRequired skips the read of a plain
/// tensor's requires_grad (importArrayInto).
bool readExchangeArray(const dlx::ExchangeApi &api, pybind11::handle array,
                       std::optional<intptr_t> exportStream, ArrayView &view,
                       GradKnown grad = GradKnown::No);

/// The producer's current work stream on CUDA device \p deviceId, as the
/// API's stream; raises the producer's error.
intptr_t currentWorkStream(const dlx::ExchangeApi &api, int deviceId);

/// \p bytes of memory on \p like's device from its producer's allocator,
/// held by the view returned (no Python object). The producer's allocator
/// must order its memory's reuse on its current work stream, as PyTorch's
/// caching allocator does, so that the memory may be given back once the
/// launches are queued.
ArrayView makeExchangeWorkspace(const ArrayView &like, int64_t bytes);

} // namespace fmhajit::python
