//===- ExchangeProducer.cpp - A test array type with DLPack's exchange API ===//
//
// The Python tests' stand-in for an array library that offers DLPack's C
// exchange API (python/src/DLPackExchange.h), as PyTorch 2.11's
// torch.Tensor does, so that the module's reading through it
// (python/src/ExchangeApi.h) runs on a machine whose PyTorch predates it.
// `Array` holds a NumPy array's memory (through the buffer protocol, which
// np.asarray reads back) and claims any DLPack device type;
// its type's __dlpack_c_exchange_api__ reads one into a DLTensor, allocates
// new ones, and names a current work stream. Every call is counted
// (`calls()`), and `fail(name)` makes the next call of one function fail
// with a Python error. An Array also exports itself through __dlpack__ (a
// legacy "dltensor" capsule), the path that subclasses and whatever the
// consumer declines take.
//
// The module belongs to the tests (fmhajit_test_producer, beside the
// package in build/python), not to the package. It shares the table's
// declarations with the module it tests; PyTorch's own table checks them
// on a GPU machine with PyTorch 2.11 (tests/python/test_torch.py).
//
//===----------------------------------------------------------------------===//
#include "python/src/DLPackExchange.h"
#include <cstring>
#include <memory>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace fmhajit::python;

namespace {

/// What the tests read back: the calls of each function, the devices the
/// stream was asked for, the streams __dlpack__ was given, and the
/// function to fail next.
struct Calls {
  int read = 0, allocate = 0, toPyObject = 0, fromPyObject = 0, dlpack = 0;
  std::vector<std::pair<int, int>> streams;
  std::vector<py::object> dlpackStreams;
  std::vector<std::vector<int64_t>> allocated;
  std::string failNext;
  intptr_t stream = 0x5eed;
};

Calls &calls() {
  static Calls *c = new Calls();
  return *c;
}

/// Whether \p name is to fail now (once); sets the Python error if so.
bool failing(const char *name) {
  if (calls().failNext != name)
    return false;
  calls().failNext.clear();
  PyErr_Format(PyExc_RuntimeError, "producer: %s failed on purpose", name);
  return true;
}

/// A versioned tensor of memory the producer allocated.
struct MadeTensor {
  dlx::ManagedTensorVersioned managed{};
  std::vector<int64_t> shape, strides;
  std::unique_ptr<char[]> memory;
};

void deleteMade(dlx::ManagedTensorVersioned *managed) {
  delete static_cast<MadeTensor *>(managed->managerContext);
}

/// DLPack's dtype of a buffer's struct format ("f", "<e", "H"...), and
/// the format of one: what NumPy reads and writes through the buffer
/// protocol, which (unlike the NumPy C API of pybind11 2.10's numpy.h) is
/// the same in NumPy 1 and 2.
DLDataType dtypeOfFormat(const std::string &format, py::ssize_t itemsize) {
  char kind = format.empty() ? 'B' : format.back();
  uint8_t code = std::strchr("efd", kind)     ? kDLFloat
                 : std::strchr("BHILQ", kind) ? kDLUInt
                                              : kDLInt;
  return {code, uint8_t(itemsize * 8), 1};
}

std::string formatOf(DLDataType dtype) {
  const char *floats[] = {"", "", "e", "", "f", "", "", "", "d"};
  const char *uints[] = {"", "B", "H", "", "I", "", "", "", "Q"};
  const char *ints[] = {"", "b", "h", "", "i", "", "", "", "q"};
  int bytes = dtype.bits / 8;
  return dtype.code == kDLFloat  ? floats[bytes]
         : dtype.code == kDLUInt ? uints[bytes]
                                 : ints[bytes];
}

/// An array of the producer: the memory of an object with the buffer
/// protocol (a NumPy array), or memory the allocator made, on the device
/// type it claims.
class Array {
public:
  Array(py::buffer values, int deviceType) : values(values) {
    py::buffer_info info = values.request(/*writable=*/true);
    device = {DLDeviceType(deviceType), 0};
    dtype = dtypeOfFormat(info.format, info.itemsize);
    for (py::ssize_t d = 0; d < info.ndim; ++d) {
      shape.push_back(info.shape[d]);
      strides.push_back(info.strides[d] / info.itemsize);
    }
    data = info.ptr;
  }

  explicit Array(dlx::ManagedTensorVersioned *managed) : made(managed) {
    const DLTensor &t = managed->dlTensor;
    data = static_cast<char *>(t.data) + t.byte_offset;
    device = t.device;
    dtype = t.dtype;
    shape.assign(t.shape, t.shape + t.ndim);
    strides.assign(t.strides, t.strides + t.ndim);
  }

  Array(const Array &) = delete;
  ~Array() {
    if (made && made->deleter)
      made->deleter(made);
  }

  void fill(DLTensor &t) {
    t.data = data;
    t.device = device;
    t.ndim = int(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
    t.strides = strides.data();
    t.byte_offset = 0;
  }

  /// The memory through the buffer protocol (np.asarray(array)).
  py::buffer_info buffer() {
    std::vector<py::ssize_t> dims(shape.begin(), shape.end()), byteStrides;
    for (int64_t s : strides)
      byteStrides.push_back(s * (dtype.bits / 8));
    return py::buffer_info(data, dtype.bits / 8, formatOf(dtype),
                           py::ssize_t(shape.size()), dims, byteStrides);
  }

  DLDevice device{};
  DLDataType dtype{};
  std::vector<int64_t> shape, strides; ///< strides in elements
  void *data = nullptr;

private:
  py::buffer values; ///< keeps the memory alive
  dlx::ManagedTensorVersioned *made = nullptr;
};

int readDLTensor(void *object, DLTensor *out) {
  ++calls().read;
  if (failing("read"))
    return -1;
  try {
    py::handle(static_cast<PyObject *>(object)).cast<Array &>().fill(*out);
    return 0;
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_TypeError, e.what());
    return -1;
  }
}

int allocate(DLTensor *prototype, dlx::ManagedTensorVersioned **out,
             void *errorContext,
             void (*setError)(void *, const char *, const char *)) {
  ++calls().allocate;
  std::vector<int64_t> shape(prototype->shape,
                             prototype->shape + prototype->ndim);
  calls().allocated.push_back(shape);
  if (calls().failNext == "allocate") {
    calls().failNext.clear();
    setError(errorContext, "MemoryError", "producer: allocate failed");
    return -1;
  }
  auto made = std::make_unique<MadeTensor>();
  made->shape = shape;
  int64_t count = 1;
  made->strides.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0; count *= shape[d])
    made->strides[d] = count;
  made->memory.reset(new char[count * prototype->dtype.bits / 8 + 1]);
  dlx::ManagedTensorVersioned &m = made->managed;
  m.version = {dlx::kMajorVersion, 3};
  m.managerContext = made.get();
  m.deleter = deleteMade;
  m.dlTensor = {made->memory.get(),
                prototype->device,
                prototype->ndim,
                prototype->dtype,
                made->shape.data(),
                made->strides.data(),
                0};
  *out = &made.release()->managed;
  return 0;
}

int managedToPyObject(dlx::ManagedTensorVersioned *tensor, void **out) {
  ++calls().toPyObject;
  if (failing("to_py_object")) {
    tensor->deleter(tensor); // it was ours to free
    return -1;
  }
  *out = py::cast(new Array(tensor), py::return_value_policy::take_ownership)
             .release()
             .ptr();
  return 0;
}

/// An owning export holding a reference to the array.
struct Exported {
  dlx::ManagedTensorVersioned managed{};
  py::object array;
};

int managedFromPyObject(void *object, dlx::ManagedTensorVersioned **out) {
  ++calls().fromPyObject;
  auto exported = std::make_unique<Exported>();
  exported->array =
      py::reinterpret_borrow<py::object>(static_cast<PyObject *>(object));
  exported->array.cast<Array &>().fill(exported->managed.dlTensor);
  exported->managed.version = {dlx::kMajorVersion, 3};
  exported->managed.managerContext = exported.get();
  exported->managed.deleter = [](dlx::ManagedTensorVersioned *m) {
    py::gil_scoped_acquire gil;
    delete static_cast<Exported *>(m->managerContext);
  };
  *out = &exported.release()->managed;
  return 0;
}

int currentWorkStream(int32_t deviceType, int32_t deviceId, void **out) {
  calls().streams.emplace_back(deviceType, deviceId);
  if (failing("stream"))
    return -1;
  *out =
      deviceType == kDLCPU ? nullptr : reinterpret_cast<void *>(calls().stream);
  return 0;
}

const dlx::ExchangeApi kApi = {{{dlx::kMajorVersion, 3}, nullptr},
                               allocate,
                               managedFromPyObject,
                               managedToPyObject,
                               readDLTensor,
                               currentWorkStream};

/// A legacy capsule over \p self's memory, as __dlpack__ gives it.
struct LegacyExport {
  DLManagedTensor managed{};
  py::object array;
};

py::capsule exportLegacy(py::object self, py::object stream) {
  ++calls().dlpack;
  calls().dlpackStreams.push_back(stream);
  auto exported = std::make_unique<LegacyExport>();
  exported->array = self;
  self.cast<Array &>().fill(exported->managed.dl_tensor);
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = [](DLManagedTensor *m) {
    py::gil_scoped_acquire gil;
    delete static_cast<LegacyExport *>(m->manager_ctx);
  };
  DLManagedTensor *managed = &exported.release()->managed;
  // A capsule nobody consumed frees its tensor.
  return py::capsule(managed, "dltensor", [](PyObject *capsule) {
    if (std::strcmp(PyCapsule_GetName(capsule), "dltensor") != 0)
      return;
    auto *m = static_cast<DLManagedTensor *>(
        PyCapsule_GetPointer(capsule, "dltensor"));
    m->deleter(m);
  });
}

py::dict callsDict() {
  py::dict d;
  d["read"] = calls().read;
  d["allocate"] = calls().allocate;
  d["to_py_object"] = calls().toPyObject;
  d["from_py_object"] = calls().fromPyObject;
  d["dlpack"] = calls().dlpack;
  d["streams"] = calls().streams;
  d["dlpack_streams"] = calls().dlpackStreams;
  d["allocated"] = calls().allocated;
  return d;
}

} // namespace

PYBIND11_MODULE(fmhajit_test_producer, m) {
  m.doc() = "A test array type with DLPack's C exchange API (fmhajit's tests)";
  auto array =
      py::class_<Array>(m, "Array", py::buffer_protocol())
          .def(py::init<py::buffer, int>(), py::arg("values"),
               py::arg("device_type") = int(kDLCPU))
          .def_buffer(&Array::buffer)
          .def("__dlpack__", exportLegacy, py::arg("stream") = py::none())
          .def("__dlpack_device__",
               [](Array &a) {
                 return py::make_tuple(int(a.device.device_type),
                                       a.device.device_id);
               })
          .def_property_readonly(
              "shape", [](Array &a) { return py::tuple(py::cast(a.shape)); });
  array.attr(dlx::kAttributeName) =
      py::capsule(static_cast<const void *>(&kApi), dlx::kCapsuleName);
  m.def("calls", callsDict, "The calls counted since reset()");
  m.def("reset", [] { calls() = Calls(); });
  m.def(
      "fail", [](std::string name) { calls().failNext = std::move(name); },
      "Fail the next call of read, allocate, to_py_object or stream");
  m.def(
      "set_stream", [](intptr_t stream) { calls().stream = stream; },
      "The stream current_work_stream names for a device");
}
