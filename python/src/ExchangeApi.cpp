//===- ExchangeApi.cpp - Arrays through DLPack's C exchange API -----------===//
#include "python/src/ExchangeApi.h"
#include "python/src/TorchTensor.h"
#include <cassert>
#include <memory>
#include <vector>

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

// __dlpack__'s stream asking the producer for no synchronization at all.
static const intptr_t kNoSync = -1;

// The API of \p type's own attribute, of DLPack 1's layout (walking back
// from a newer major version); null where there is none.
static const dlx::ExchangeApi *lookUpApi(py::handle type) {
  py::object own = type.attr("__dict__");
  py::object capsule = own.attr("get")(dlx::kAttributeName);
  if (!PyCapsule_IsValid(capsule.ptr(), dlx::kCapsuleName))
    return nullptr;
  auto *header = static_cast<const dlx::ExchangeApiHeader *>(
      PyCapsule_GetPointer(capsule.ptr(), dlx::kCapsuleName));
  while (header && header->version.major > dlx::kMajorVersion)
    header = header->previous;
  if (!header || header->version.major != dlx::kMajorVersion)
    return nullptr;
  // The header leads the table: a major version fixes what follows it.
  auto *api = reinterpret_cast<const dlx::ExchangeApi *>(header);
  if (!api->allocate || !api->managedToPyObject || !api->currentWorkStream)
    return nullptr;
  return api;
}

namespace {
/// The APIs of the types seen, by type. Each type is held, so that its
/// address is not reused by another; past kMaxTypes (a program making
/// array types on the fly) a type is looked up at every call.
class ApiCache {
public:
  const dlx::ExchangeApi *find(PyObject *type) {
    for (const Entry &entry : entries)
      if (entry.type == type)
        return entry.api;
    const dlx::ExchangeApi *api = lookUpApi(type);
    if (entries.size() < kMaxTypes) {
      Py_INCREF(type);
      entries.push_back({type, api});
    }
    return api;
  }

private:
  static constexpr size_t kMaxTypes = 32;
  struct Entry {
    PyObject *type;
    const dlx::ExchangeApi *api;
  };
  std::vector<Entry> entries;
};
} // namespace

const dlx::ExchangeApi *python::exchangeApiOf(py::handle array) {
  static ApiCache *cache = new ApiCache(); // never destroyed: holds types
  return cache->find(reinterpret_cast<PyObject *>(Py_TYPE(array.ptr())));
}

// The Python error a producer's function set, or one saying it set none.
[[noreturn]] static void raiseProducerError(const char *what) {
  if (PyErr_Occurred())
    throw py::error_already_set();
  throw std::runtime_error(std::string(what) +
                           ": the array library's DLPack exchange API failed "
                           "without saying why");
}

bool python::readExchangeArray(const dlx::ExchangeApi &api, py::handle array,
                               std::optional<intptr_t> exportStream,
                               ArrayView &view, GradKnown grad) {
  if (!api.readDLTensor)
    return false;
  // DLPack refuses a tensor that requires grad, with its message.
  if (grad != GradKnown::NotRequired && isPlainTensor(array) &&
      requiresGrad(array))
    return false;
  DLTensor t{};
  if (api.readDLTensor(array.ptr(), &t) != 0) {
    PyErr_Clear(); // importArray's path says what is wrong, as before
    return false;
  }
  // Any other stream asks the producer to order its work before it.
  if (t.device.device_type == kDLCUDA &&
      (!exportStream || *exportStream != kNoSync))
    return false;
  readDLTensor(t, view);       // shape and strides are valid until we return
  view.normalizeUnitStrides(); // as torch's DLPack export (TorchTensor.h)
  view.producer = ExchangeOrigin{&api, t.device};
  view.source = py::reinterpret_borrow<py::object>(array);
  return true;
}

intptr_t python::currentWorkStream(const dlx::ExchangeApi &api, int deviceId) {
  void *stream = nullptr;
  if (api.currentWorkStream(kDLCUDA, deviceId, &stream) != 0)
    raiseProducerError("the current stream");
  return reinterpret_cast<intptr_t>(stream);
}

// The allocator's error reporter: \p kind names a Python exception
// ("MemoryError"); another name raises RuntimeError.
static void setAllocationError(void *, const char *kind, const char *message) {
  PyObject *type =
      kind ? PyDict_GetItemString(PyEval_GetBuiltins(), kind) : nullptr;
  if (!type || !PyExceptionClass_Check(type))
    type = PyExc_RuntimeError;
  PyErr_SetString(type, message ? message : "allocation failed");
}

using MadeTensor =
    std::unique_ptr<dlx::ManagedTensorVersioned, VersionedTensorDeleter>;

// A new tensor from \p like's producer, of \p dtype and \p shape on its
// device; raises the allocator's error.
static MadeTensor allocate(const ArrayView &like, DLDataType dtype,
                           std::vector<int64_t> shape, const char *what) {
  assert(like.producer && "allocates only for a view read through an API");
  DLTensor prototype{};
  prototype.device = like.producer->device;
  prototype.ndim = int(shape.size());
  prototype.dtype = dtype;
  prototype.shape = shape.data();
  dlx::ManagedTensorVersioned *made = nullptr;
  int status = like.producer->api->allocate(&prototype, &made, nullptr,
                                            setAllocationError);
  if (status != 0 || !made)
    raiseProducerError(what);
  return MadeTensor(made);
}

ArrayView python::makeExchangeWorkspace(const ArrayView &like, int64_t bytes) {
  DLDataType byte{kDLUInt, 8, 1};
  ArrayView ws;
  ws.what = "workspace";
  ws.made = allocate(like, byte, {bytes}, "workspace");
  readDLTensor(ws.made->dlTensor, ws);
  return ws;
}
