//===- ArrayView.cpp - Consuming DLPack capsules
//---------------------------===//
#include "python/src/ArrayView.h"
#include "python/src/ExchangeApi.h"
#include "python/src/TorchTensor.h"
#include <algorithm>
#include <cstring>

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

// The capsule names of the DLPack protocol: a consumer renames the capsule
// it took the tensor from, so that the producer's capsule destructor leaves
// the tensor to the consumer's call of its deleter.
static const char kCapsuleName[] = "dltensor";
static const char kUsedCapsuleName[] = "used_dltensor";
// __dlpack__'s stream for CUDA's legacy default stream: 0 is reserved.
static const intptr_t kLegacyDefaultStream = 1;
// __dlpack__'s stream asking the producer for no synchronization at all.
static const intptr_t kNoSync = -1;

void ManagedTensorDeleter::operator()(DLManagedTensor *managed) const {
  if (managed->deleter)
    managed->deleter(managed);
}

void VersionedTensorDeleter::operator()(
    dlx::ManagedTensorVersioned *managed) const {
  if (managed->deleter)
    managed->deleter(managed);
}

static std::string dlpackTypeName(DLDataType t) {
  const char *base = "unknown";
  switch (t.code) {
  case kDLInt:
    base = "int";
    break;
  case kDLUInt:
    base = "uint";
    break;
  case kDLFloat:
    base = "float";
    break;
  case kDLBfloat:
    base = "bfloat";
    break;
  case kDLComplex:
    base = "complex";
    break;
  }
  std::string name = base + std::to_string(t.bits);
  if (t.lanes != 1)
    name += "x" + std::to_string(t.lanes);
  return name;
}

// NumPy has no bfloat16: bf16 arrays from NumPy are their bit patterns in
// uint16 (docs/python.md), and fmhajit reads every uint16 array that way.
static ElementType elementType(DLDataType t) {
  if (t.lanes != 1)
    return ElementType::Other;
  if (t.code == kDLFloat && t.bits == 32)
    return ElementType::F32;
  if (t.code == kDLFloat && t.bits == 16)
    return ElementType::F16;
  if ((t.code == kDLBfloat || t.code == kDLUInt) && t.bits == 16)
    return ElementType::BF16;
  if (t.code == kDLInt && t.bits == 32)
    return ElementType::Int32;
  return ElementType::Other;
}

api::DType ArrayView::dtype() const {
  switch (type) {
  case ElementType::F32:
    return api::DType::F32;
  case ElementType::F16:
    return api::DType::F16;
  default:
    return api::DType::BF16;
  }
}

bool ArrayView::packed() const {
  int64_t expected = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

void ArrayView::normalizeUnitStrides() {
  // torch's contiguous strides: a dim of size 1 steps over the dims after.
  int64_t expected = 1;
  rawCStrides = true;
  for (int d = ndim - 1; d >= 0; --d) {
    rawCStrides = rawCStrides && strides[d] == expected;
    expected *= std::max<int64_t>(shape[d], 1);
    if (shape[d] < 2)
      strides[d] = 1;
  }
}

std::string ArrayView::typeName() const { return dlpackTypeName(dlType); }

std::string ArrayView::deviceText() const {
  return onCuda ? "cuda:" + std::to_string(deviceId) : "cpu";
}

// The method's name, made once: every call looks it up on four arrays.
static PyObject *dlpackName() {
  static PyObject *name = PyUnicode_InternFromString("__dlpack__");
  return name;
}

// Calls array.__dlpack__(), passing the stream for CUDA memory only (the
// protocol refuses a stream for host memory).
static py::object exportCapsule(py::handle array,
                                std::optional<intptr_t> stream) {
  if (!stream) {
    PyObject *capsule = PyObject_CallMethodNoArgs(array.ptr(), dlpackName());
    if (!capsule)
      throw py::error_already_set();
    return py::reinterpret_steal<py::object>(capsule);
  }
  if (*stream == kNoSync) // the caller vouches for the order: pass it as is
    return array.attr("__dlpack__")(py::arg("stream") = kNoSync);
  py::tuple device = array.attr("__dlpack_device__")();
  if (device[0].cast<int>() != kDLCUDA)
    return array.attr("__dlpack__")();
  intptr_t s = *stream == 0 ? kLegacyDefaultStream : *stream;
  return array.attr("__dlpack__")(py::arg("stream") = s);
}

static py::object capsuleOf(py::handle array, const char *what,
                            std::optional<intptr_t> stream) {
  if (PyCapsule_CheckExact(array.ptr()))
    return py::reinterpret_borrow<py::object>(array);
  if (!PyObject_HasAttr(array.ptr(), dlpackName()))
    throw py::type_error(std::string(what) +
                         ": expected an array that supports DLPack (NumPy, "
                         "PyTorch, ...); got " +
                         py::str(py::type::of(array)).cast<std::string>());
  try {
    return exportCapsule(array, stream);
  } catch (py::error_already_set &e) {
    // NumPy before 2.1 refuses read-only arrays (np.broadcast_to's, say).
    if (!e.matches(PyExc_BufferError))
      throw;
    throw py::value_error(std::string(what) + ": " +
                          py::str(e.value()).cast<std::string>() +
                          " Pass a writable copy.");
  }
}

// Takes the tensor out of \p capsule and renames it, as the protocol asks.
static DLManagedTensor *consume(py::handle capsule, const char *what) {
  const char *name = PyCapsule_GetName(capsule.ptr());
  if (!name || std::strcmp(name, kCapsuleName) != 0)
    throw py::type_error(std::string(what) +
                         ": expected a DLPack capsule named \"dltensor\" (a "
                         "capsule can be consumed only once)");
  auto *managed = static_cast<DLManagedTensor *>(
      PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (!managed)
    throw py::error_already_set();
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  return managed;
}

static void checkDevice(const ArrayView &view, DLDevice device) {
  if (device.device_type != kDLCPU && device.device_type != kDLCUDA &&
      device.device_type != kDLCUDAHost)
    throw py::value_error(view.what + ": memory on DLPack device type " +
                          std::to_string(device.device_type) +
                          " is not supported: use host (CPU) or CUDA memory");
}

static void readShape(ArrayView &view, const DLTensor &t) {
  if (t.ndim < 0 || t.ndim > 4)
    throw py::type_error(view.what + ": expected at most 4 dims; got " +
                         std::to_string(t.ndim));
  view.ndim = t.ndim;
  int64_t packedStride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    view.shape[d] = t.shape[d];
    // DLPack before 1.0 may leave strides null for a packed array.
    view.strides[d] = t.strides ? t.strides[d] : packedStride;
    packedStride *= t.shape[d];
  }
}

void python::readDLTensor(const DLTensor &t, ArrayView &view) {
  checkDevice(view, t.device);
  view.onCuda = t.device.device_type == kDLCUDA;
  view.deviceId = t.device.device_id;
  view.type = elementType(t.dtype);
  view.dlType = t.dtype;
  view.data = static_cast<char *>(t.data) + t.byte_offset;
  readShape(view, t);
}

void python::importArrayInto(py::handle array, const char *what,
                             std::optional<intptr_t> stream, ArrayView &view,
                             GradKnown grad) {
  view.what = what;
  if (const dlx::ExchangeApi *api = exchangeApiOf(array))
    if (readExchangeArray(*api, array, stream, view, grad))
      return;
  if (readTorchTensor(array, stream, view, grad))
    return;
  py::object capsule = capsuleOf(array, what, stream);
  view.owner.reset(consume(capsule, what));
  readDLTensor(view.owner->dl_tensor, view);
}

ArrayView python::importArray(py::handle array, const char *what,
                              std::optional<intptr_t> stream) {
  ArrayView view;
  importArrayInto(array, what, stream, view);
  return view;
}

PyObject *fmhajit::python::importedModule(PyObject *name) {
  PyObject *module = PyDict_GetItemWithError(PyImport_GetModuleDict(), name);
  if (!module)
    PyErr_Clear();
  return module;
}
