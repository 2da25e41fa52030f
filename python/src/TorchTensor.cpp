//===- TorchTensor.cpp - A PyTorch tensor read without DLPack -------------===//
#include "python/src/TorchTensor.h"

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

// __dlpack__'s stream asking the producer for no synchronization at all.
static const intptr_t kNoSync = -1;

namespace {
/// torch's objects the reader compares with, and the attribute names it
/// reads, made once (the GIL serializes every caller).
struct Torch {
  PyObject *tensorType = nullptr, *strided = nullptr;
  /// A ROCm build, whose GPU tensors say is_cuda but DLPack calls ROCm
  /// memory (which fmhajit refuses, with DLPack's device type).
  bool rocm = false;
  /// torch.float32, float16, bfloat16, int32, with their ElementType and
  /// the name DLPack would give.
  struct DType {
    PyObject *object;
    ElementType type;
    const char *name;
  } dtypes[4] = {{nullptr, ElementType::F32, "float32"},
                 {nullptr, ElementType::F16, "float16"},
                 {nullptr, ElementType::BF16, "bfloat16"},
                 {nullptr, ElementType::Int32, "int32"}};
  PyObject *requiresGrad, *layout, *dtype, *isCuda, *isCpu, *getDevice,
      *dataPtr, *shape, *stride;

  Torch()
      : requiresGrad(PyUnicode_InternFromString("requires_grad")),
        layout(PyUnicode_InternFromString("layout")),
        dtype(PyUnicode_InternFromString("dtype")),
        isCuda(PyUnicode_InternFromString("is_cuda")),
        isCpu(PyUnicode_InternFromString("is_cpu")),
        getDevice(PyUnicode_InternFromString("get_device")),
        dataPtr(PyUnicode_InternFromString("data_ptr")),
        shape(PyUnicode_InternFromString("shape")),
        stride(PyUnicode_InternFromString("stride")) {}

  /// Whether torch is imported and its objects found. A program that never
  /// imported torch has no tensors; once found, they stay (strong
  /// references: torch is never unloaded).
  bool find() {
    if (tensorType)
      return true;
    static PyObject *name = PyUnicode_InternFromString("torch");
    PyObject *torch = PyDict_GetItemWithError(PyImport_GetModuleDict(), name);
    if (!torch) {
      PyErr_Clear();
      return false;
    }
    py::handle module(torch);
    // A torch still importing may lack these: look again next time.
    const char *dtypeNames[] = {"float32", "float16", "bfloat16", "int32"};
    if (!py::hasattr(module, "Tensor") || !py::hasattr(module, "strided"))
      return false;
    for (const char *dtypeName : dtypeNames)
      if (!py::hasattr(module, dtypeName))
        return false;
    for (unsigned i = 0; i < 4; ++i)
      dtypes[i].object = py::object(module.attr(dtypeNames[i])).release().ptr();
    strided = py::object(module.attr("strided")).release().ptr();
    py::object version = py::getattr(module, "version", py::none());
    rocm = !py::getattr(version, "hip", py::none()).is_none();
    tensorType = py::object(module.attr("Tensor")).release().ptr();
    return true;
  }
};
} // namespace

static Torch &torchObjects() {
  static Torch *torch = new Torch(); // never destroyed: it holds references
  return *torch;
}

// The attribute (or, with \p call, the method's result) \p name of
// \p object; null with no error set when it fails.
static py::object read(py::handle object, PyObject *name, bool call = false) {
  PyObject *value = call ? PyObject_CallMethodNoArgs(object.ptr(), name)
                         : PyObject_GetAttr(object.ptr(), name);
  if (!value)
    PyErr_Clear();
  return py::reinterpret_steal<py::object>(value);
}

// Reads \p sizes (torch.Size) and \p strides (a tuple) into \p view, as
// DLPack would give them; false when they are not what a tensor gives.
static bool readDims(ArrayView &view, py::handle sizes, py::handle strides) {
  if (!sizes || !strides || !PyTuple_Check(sizes.ptr()) ||
      !PyTuple_Check(strides.ptr()))
    return false;
  Py_ssize_t ndim = PyTuple_GET_SIZE(sizes.ptr());
  if (ndim > 4 || PyTuple_GET_SIZE(strides.ptr()) != ndim)
    return false; // DLPack's path says what is wrong
  view.ndim = int(ndim);
  for (Py_ssize_t d = 0; d < ndim; ++d) {
    long long size = PyLong_AsLongLong(PyTuple_GET_ITEM(sizes.ptr(), d));
    long long stride = PyLong_AsLongLong(PyTuple_GET_ITEM(strides.ptr(), d));
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    view.shape[d] = size;
    view.strides[d] = size < 2 ? 1 : stride;
  }
  return true;
}

// The dtype, device and memory of \p array; false to leave it to DLPack.
static bool readStorage(ArrayView &view, py::handle array, const Torch &torch,
                        std::optional<intptr_t> stream) {
  py::object dtype = read(array, torch.dtype);
  const Torch::DType *match = nullptr;
  for (const Torch::DType &d : torch.dtypes)
    if (dtype.ptr() == d.object)
      match = &d;
  if (!match)
    return false;
  view.type = match->type;
  view.typeName = match->name;
  py::object cuda = read(array, torch.isCuda);
  view.onCuda = cuda.ptr() == Py_True;
  if (view.onCuda) {
    if (torch.rocm)
      return false;
    // Any other stream asks the producer to order its work before it.
    if (!stream || *stream != kNoSync)
      return false;
    py::object index = read(array, torch.getDevice, /*call=*/true);
    if (!index)
      return false;
    view.deviceId = int(PyLong_AsLong(index.ptr()));
  } else if (read(array, torch.isCpu).ptr() != Py_True) {
    return false; // meta, MPS, XLA...: DLPack's error names the device
  }
  py::object data = read(array, torch.dataPtr, /*call=*/true);
  if (!data)
    return false;
  view.data = PyLong_AsVoidPtr(data.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

std::optional<ArrayView>
python::readTorchTensor(py::handle array, const char *what,
                        std::optional<intptr_t> stream) {
  Torch &torch = torchObjects();
  if (!torch.find() || Py_TYPE(array.ptr()) !=
                           reinterpret_cast<PyTypeObject *>(torch.tensorType))
    return std::nullopt;
  if (read(array, torch.requiresGrad).ptr() != Py_False ||
      read(array, torch.layout).ptr() != torch.strided)
    return std::nullopt;
  ArrayView view;
  view.what = what;
  if (!readStorage(view, array, torch, stream) ||
      !readDims(view, read(array, torch.shape),
                read(array, torch.stride, /*call=*/true)))
    return std::nullopt;
  view.source = py::reinterpret_borrow<py::object>(array);
  return view;
}
