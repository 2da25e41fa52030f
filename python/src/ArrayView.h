//===- ArrayView.h - A Python array seen through DLPack
//--------------------===//
//
// fmhajit reads every array the way array libraries exchange them: DLPack
// (the __dlpack__ / __dlpack_device__ protocol, or a legacy "dltensor"
// capsule). An ArrayView is the consumed DLManagedTensor: its data
// pointer, dtype, device, shape and strides in elements. It owns the
// managed tensor and calls the producer's deleter when destroyed, which
// needs the GIL: views live outside any gil_scoped_release. A plain
// PyTorch tensor is read without DLPack's capsules (through DLPack's C
// exchange API where its type has one, ExchangeApi.h, else from its
// attributes, TorchTensor.h); its view holds a reference to the tensor
// instead.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include "python/src/DLPackExchange.h"
#include <array>
#include <dlpack/dlpack.h>
#include <memory>
#include <optional>
#include <pybind11/pybind11.h>
#include <string>

namespace fmhajit::python {

/// Calls the producer's deleter, as the DLPack protocol asks a consumer to.
struct ManagedTensorDeleter {
  void operator()(DLManagedTensor *managed) const;
};

/// Calls a versioned tensor's deleter (an exchange API's allocation).
struct VersionedTensorDeleter {
  void operator()(dlx::ManagedTensorVersioned *managed) const;
};

/// A view read through an array type's C exchange API (ExchangeApi.h): the
/// API, and the device as the producer named it, where the API allocates
/// for the call (a CUDA plan's workspace).
struct ExchangeOrigin {
  const dlx::ExchangeApi *api = nullptr;
  DLDevice device{};
};

/// The element types fmhajit reads, with the DLPack codes that carry them.
enum class ElementType { F32, F16, BF16, Int32, Other };

/// One imported array (at most 4 dims, fmhajit's largest).
struct ArrayView {
  std::string what; ///< "q", "out", ... for messages
  void *data = nullptr;
  ElementType type = ElementType::Other;
  DLDataType dlType{}; ///< the dtype as DLPack gives it (typeName())
  bool onCuda = false; ///< else host memory
  int deviceId = 0;
  int ndim = 0;
  std::array<int64_t, 4> shape{}, strides{}; ///< strides in elements
  std::unique_ptr<DLManagedTensor, ManagedTensorDeleter> owner;
  /// An exchange API's allocation held without a Python object (a CUDA
  /// plan's workspace).
  std::unique_ptr<dlx::ManagedTensorVersioned, VersionedTensorDeleter> made;
  pybind11::object source; ///< a tensor read without a capsule, kept alive
  std::optional<ExchangeOrigin> producer; ///< read through an exchange API
  /// Whether the producer's own strides, size-1 dims' included, are those
  /// of a packed C array (normalizeUnitStrides, which only a view read
  /// without a capsule calls): torch.empty_like(q) keeps them as they are.
  bool rawCStrides = false;

  /// The public API's dtype of a floating-point view (F32, F16 or BF16).
  api::DType dtype() const;
  /// The dtype as DLPack names it ("float32", "uint16"...), for messages:
  /// made only when one is, not at every read.
  std::string typeName() const;
  /// Whether the dims are packed row-major (strides of a C array).
  bool packed() const;
  /// "cpu" or "cuda:N".
  std::string deviceText() const;
  /// Notes rawCStrides, then gives each dim of size 1 stride 1, as torch's
  /// DLPack export does (since 1.13; later versions only where the strides
  /// are not already C-contiguous ones): its stride is never stepped over,
  /// so only the plan's key could tell.
  void normalizeUnitStrides();
};

/// Fills \p view's data, dtype, device and dims from \p t, as importArray
/// reads every DLPack tensor: raises ValueError for memory other than the
/// host's or CUDA's, TypeError past 4 dims. Strides are DLPack's (computed
/// where a producer before DLPack 1.2 left them null).
void readDLTensor(const DLTensor &t, ArrayView &view);

/// Imports \p array, an object with __dlpack__ or a legacy capsule, as
/// \p what (through its type's exchange API where it has one, ExchangeApi.h).
/// \p stream is the consumer's stream, passed to a CUDA array's __dlpack__
/// so that the producer orders its work before ours; -1 (the protocol's "no
/// synchronization") goes to every array as it is. Raises
/// TypeError for what is not an array of at most 4 dims of a dtype fmhajit
/// reads, ValueError for memory on a device other than the host or CUDA.
ArrayView importArray(pybind11::handle array, const char *what,
                      std::optional<intptr_t> stream);

/// What the caller of importArrayInto knows of a plain torch.Tensor's
/// requires_grad (DLPack refuses a tensor that requires grad, and the
/// direct reads leave such a tensor to DLPack, TorchTensor.h): the common
/// call (AttentionCall.h) has read q's, k's and v's before it reads them,
/// and a read costs a torch getter.
enum class GradKnown { No, NotRequired };

/// importArray into \p view, in place (a call reads five arrays), where
/// \p grad says whether \p array, a plain tensor, is known not to require
/// grad.
void importArrayInto(pybind11::handle array, const char *what,
                     std::optional<intptr_t> stream, ArrayView &view,
                     GradKnown grad = GradKnown::No);

/// The module \p name (an interned str) as sys.modules holds it, borrowed,
/// or null where nothing imported it: an array of a library nobody imported
/// cannot have come, so this never imports one.
PyObject *importedModule(PyObject *name);

} // namespace fmhajit::python
