//===- DLPackExchange.h - DLPack's C exchange API, declared ---------------===//
//
// DLPack 1.3 (dmlc/dlpack, include/dlpack/dlpack.h) adds a C-level exchange
// between array libraries: an array type holds, as its own attribute
// __dlpack_c_exchange_api__, a PyCapsule named "dlpack_exchange_api" around
// a table of five functions (read an array into a caller's DLTensor without
// allocating, export or import an owning versioned tensor, allocate a new
// one, and ask for the current work stream of a device). PyTorch's
// torch.Tensor has one (torch._C._dlpack_exchange_api()).
//
// The dlpack.h this build includes is Debian 12's, version 0.6, which
// predates the table and the versioned tensor. These declarations mirror
// DLPack 1.3's layout (the 1.3 names in the comments) under names of our
// own, so that a newer dlpack.h can be included beside them. DLTensor,
// DLDevice and DLDataType are laid out alike in 0.6 and 1.3; the table's
// functions are C functions that report failure by returning nonzero.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <dlpack/dlpack.h>

namespace fmhajit::python::dlx {

/// DLPackVersion: a major version changes the layout of what follows it.
struct Version {
  uint32_t major;
  uint32_t minor;
};

/// The major version whose layout these declarations mirror.
inline constexpr uint32_t kMajorVersion = 1;

/// DLManagedTensorVersioned: an owning tensor; its deleter frees it.
struct ManagedTensorVersioned {
  Version version;
  void *managerContext;
  void (*deleter)(ManagedTensorVersioned *self);
  uint64_t flags; ///< bit 0: read-only; bit 1: a copy the producer made
  DLTensor dlTensor;
};

/// DLPackManagedTensorAllocator: a new tensor of the prototype's dtype,
/// ndim, shape and device. Returns 0, or nonzero after calling setError.
using AllocateFn = int (*)(DLTensor *prototype, ManagedTensorVersioned **out,
                           void *errorContext,
                           void (*setError)(void *errorContext,
                                            const char *kind,
                                            const char *message));
/// DLPackManagedTensorFromPyObjectNoSync: an owning export of an array.
using ManagedFromPyObjectFn = int (*)(void *pyObject,
                                      ManagedTensorVersioned **out);
/// DLPackManagedTensorToPyObjectNoSync: an array of the producer's type
/// around \p tensor, whose ownership it takes (a new reference).
using ManagedToPyObjectFn = int (*)(ManagedTensorVersioned *tensor,
                                    void **outPyObject);
/// DLPackDLTensorFromPyObjectNoSync: fills \p out with a view of the array
/// that is valid (shape and strides too) until control returns to Python.
using DLTensorFromPyObjectFn = int (*)(void *pyObject, DLTensor *out);
/// DLPackCurrentWorkStream: the producer's current stream on a device (null
/// for the host). The device type is DLDeviceType, an int32_t.
using CurrentWorkStreamFn = int (*)(int32_t deviceType, int32_t deviceId,
                                    void **outStream);

/// DLPackExchangeAPIHeader: stable across versions. A consumer of an older
/// major version walks previous to find one it knows.
struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader *previous;
};

/// DLPackExchangeAPI: every function but readDLTensor is non-null; all
/// but allocate set a Python error when they fail.
struct ExchangeApi {
  ExchangeApiHeader header;
  AllocateFn allocate;
  ManagedFromPyObjectFn managedFromPyObject;
  ManagedToPyObjectFn managedToPyObject;
  DLTensorFromPyObjectFn readDLTensor; ///< may be null
  CurrentWorkStreamFn currentWorkStream;
};

/// The capsule's name and the attribute that holds it, on the type itself.
inline constexpr char kCapsuleName[] = "dlpack_exchange_api";
inline constexpr char kAttributeName[] = "__dlpack_c_exchange_api__";

} // namespace fmhajit::python::dlx
