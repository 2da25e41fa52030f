//===- TorchTensor.cpp - PyTorch tensors without DLPack -------------------===//
#include "python/src/TorchTensor.h"
#include <utility>

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

// __dlpack__'s stream asking the producer for no synchronization at all.
static const intptr_t kNoSync = -1;

namespace {
/// One attribute or no-argument method of torch.Tensor, read through the
/// descriptor the type holds: PyObject_GetAttr would find that descriptor
/// again at every read (a type lookup and, for a method, the tensor's own
/// dict), some 5 ns of a read's 20 to 60 on torch 1.13's CPU, where a call
/// reads about 25. Found once: a member replaced on torch.Tensor later is
/// not seen, and a tensor's own attributes never were (only a method's).
class TensorMember {
public:
  /// Finds \p name on \p type; a member that is neither a C getter nor a
  /// method descriptor (a Python property, say) is read by name.
  void find(PyObject *type, const char *name) {
    this->name = PyUnicode_InternFromString(name);
    descriptor = PyObject_GetAttr(type, this->name);
    if (!descriptor)
      PyErr_Clear();
    else if (Py_IS_TYPE(descriptor, &PyGetSetDescr_Type))
      getset = reinterpret_cast<PyGetSetDescrObject *>(descriptor)->d_getset;
    else if (!Py_IS_TYPE(descriptor, &PyMethodDescr_Type))
      Py_CLEAR(descriptor);
  }

  /// The attribute (or the method's result) of \p tensor, an instance of
  /// the type; null with no error set when it fails.
  py::object read(PyObject *tensor) const {
    PyObject *value;
    if (getset && getset->get)
      value = getset->get(tensor, getset->closure);
    else if (descriptor)
      value = PyObject_Vectorcall(descriptor, &tensor, 1, nullptr);
    else
      value = PyObject_GetAttr(tensor, name);
    if (!value)
      PyErr_Clear();
    return py::reinterpret_steal<py::object>(value);
  }

private:
  PyObject *name = nullptr;
  PyObject *descriptor = nullptr; ///< a method's, or a getter's
  PyGetSetDef *getset = nullptr;
};

/// torch's objects the reader compares with and calls, and the members it
/// reads, found once (the GIL serializes every caller).
struct Torch {
  PyObject *tensorType = nullptr, *strided = nullptr;
  /// A ROCm build, whose GPU tensors say is_cuda but DLPack calls ROCm
  /// memory (which fmhajit refuses, with DLPack's device type).
  bool rocm = false;
  /// torch.float32, float16, bfloat16, int32, with their ElementType and
  /// the dtype DLPack would give.
  struct DType {
    PyObject *object;
    ElementType type;
    DLDataType dlType;
  } dtypes[4] = {{nullptr, ElementType::F32, {kDLFloat, 32, 1}},
                 {nullptr, ElementType::F16, {kDLFloat, 16, 1}},
                 {nullptr, ElementType::BF16, {kDLBfloat, 16, 1}},
                 {nullptr, ElementType::Int32, {kDLInt, 32, 1}}};
  TensorMember requiresGrad, layout, dtype, isCuda, isCpu, getDevice, dataPtr,
      shape, stride;
  /// torch.empty_like, torch.contiguous_format, and ("memory_format",):
  /// the keyword names of a vectorcall passing it.
  PyObject *emptyLike = nullptr, *contiguousFormat = nullptr,
           *memoryFormatName = nullptr;

  /// Whether torch is imported and its objects found. A program that never
  /// imported torch has no tensors; once found, they stay (strong
  /// references: torch is never unloaded).
  bool find() {
    if (tensorType)
      return true;
    static PyObject *name = PyUnicode_InternFromString("torch");
    PyObject *torch = importedModule(name);
    if (!torch)
      return false;
    py::handle module(torch);
    // A torch still importing may lack these: look again next time.
    const char *dtypeNames[] = {"float32", "float16", "bfloat16", "int32"};
    for (const char *needed :
         {"Tensor", "strided", "empty_like", "contiguous_format", "float32",
          "float16", "bfloat16", "int32"})
      if (!py::hasattr(module, needed))
        return false;
    for (unsigned i = 0; i < 4; ++i)
      dtypes[i].object = keep(module.attr(dtypeNames[i]));
    strided = keep(module.attr("strided"));
    py::object version = py::getattr(module, "version", py::none());
    rocm = !py::getattr(version, "hip", py::none()).is_none();
    emptyLike = keep(module.attr("empty_like"));
    contiguousFormat = keep(module.attr("contiguous_format"));
    memoryFormatName = keep(py::make_tuple("memory_format"));
    tensorType = keep(module.attr("Tensor"));
    findMembers();
    return true;
  }

  /// Whether \p object is a plain tensor (find() must have succeeded).
  bool isTensor(PyObject *object) const {
    return reinterpret_cast<PyObject *>(Py_TYPE(object)) == tensorType;
  }

private:
  static PyObject *keep(py::object object) { return object.release().ptr(); }

  void findMembers() {
    std::pair<TensorMember *, const char *> members[] = {
        {&requiresGrad, "requires_grad"},
        {&layout, "layout"},
        {&dtype, "dtype"},
        {&isCuda, "is_cuda"},
        {&isCpu, "is_cpu"},
        {&getDevice, "get_device"},
        {&dataPtr, "data_ptr"},
        {&shape, "shape"},
        {&stride, "stride"}};
    for (auto [member, memberName] : members)
      member->find(tensorType, memberName);
  }
};
} // namespace

static Torch &torchObjects() {
  static Torch *torch = new Torch(); // never destroyed: it holds references
  return *torch;
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
    view.strides[d] = stride;
  }
  view.normalizeUnitStrides();
  return true;
}

// The dtype, device and memory of \p array; false to leave it to DLPack.
static bool readStorage(ArrayView &view, PyObject *array, const Torch &torch,
                        std::optional<intptr_t> stream) {
  py::object dtype = torch.dtype.read(array);
  const Torch::DType *match = nullptr;
  for (const Torch::DType &d : torch.dtypes)
    if (dtype.ptr() == d.object)
      match = &d;
  if (!match)
    return false;
  view.type = match->type;
  view.dlType = match->dlType;
  py::object cuda = torch.isCuda.read(array);
  view.onCuda = cuda.ptr() == Py_True;
  if (view.onCuda) {
    if (torch.rocm)
      return false;
    // Any other stream asks the producer to order its work before it.
    if (!stream || *stream != kNoSync)
      return false;
    py::object index = torch.getDevice.read(array);
    if (!index)
      return false;
    view.deviceId = int(PyLong_AsLong(index.ptr()));
  } else if (torch.isCpu.read(array).ptr() != Py_True) {
    return false; // meta, MPS, XLA...: DLPack's error names the device
  }
  py::object data = torch.dataPtr.read(array);
  if (!data)
    return false;
  view.data = PyLong_AsVoidPtr(data.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

bool python::readTorchTensor(py::handle array, std::optional<intptr_t> stream,
                             ArrayView &view, GradKnown grad) {
  Torch &torch = torchObjects();
  PyObject *tensor = array.ptr();
  if (!torch.find() || !torch.isTensor(tensor))
    return false;
  if ((grad != GradKnown::NotRequired &&
       torch.requiresGrad.read(tensor).ptr() != Py_False) ||
      torch.layout.read(tensor).ptr() != torch.strided)
    return false;
  if (!readStorage(view, tensor, torch, stream) ||
      !readDims(view, torch.shape.read(tensor), torch.stride.read(tensor)))
    return false;
  view.source = py::reinterpret_borrow<py::object>(array);
  return true;
}

bool python::isPlainTensor(py::handle array) {
  Torch &torch = torchObjects();
  return torch.find() && torch.isTensor(array.ptr());
}

bool python::isCudaTensor(py::handle tensor) {
  return torchObjects().isCuda.read(tensor.ptr()).ptr() == Py_True;
}

bool python::requiresGrad(py::handle tensor) {
  return torchObjects().requiresGrad.read(tensor.ptr()).ptr() != Py_False;
}

// torch.empty_like(q, memory_format=torch.contiguous_format) where the
// head dims agree (0.8 against 1.2 us for q.new_empty(shape) on torch
// 1.13's CPU), else q.new_empty(shape): both packed, of q's dtype and device.
// Where q's own strides are packed ones, empty_like(q) makes the same
// tensor (its preserve_format copies a dense tensor's strides) without
// the keyword torch's argument parser matches: 0.62 against 0.69 us there.
static py::object emptyOutput(py::handle q, const ArrayView &qView,
                              int64_t headDimV, const Torch &torch) {
  int last = qView.ndim - 1;
  if (qView.shape[last] == headDimV) {
    // q, and memory_format as a keyword where it is passed
    PyObject *args[] = {q.ptr(), torch.contiguousFormat};
    PyObject *names = qView.rawCStrides ? nullptr : torch.memoryFormatName;
    PyObject *made = PyObject_Vectorcall(torch.emptyLike, args, 1, names);
    if (!made)
      throw py::error_already_set();
    return py::reinterpret_steal<py::object>(made);
  }
  py::tuple shape(qView.ndim);
  for (int d = 0; d < qView.ndim; ++d)
    shape[d] = py::int_(d == last ? headDimV : qView.shape[d]);
  return q.attr("new_empty")(shape);
}

// \p q's view with head_dim \p headDimV, packed (a dim of size 1 with
// stride 1, as readDims gives it), at \p data.
static void packedLike(ArrayView &view, const ArrayView &q, int64_t headDimV,
                       void *data) {
  view.what = "out";
  view.data = data;
  view.type = q.type;
  view.dlType = q.dlType;
  view.onCuda = q.onCuda;
  view.deviceId = q.deviceId;
  view.ndim = q.ndim;
  int64_t packedStride = 1;
  for (int d = q.ndim - 1; d >= 0; --d) {
    view.shape[d] = d == q.ndim - 1 ? headDimV : q.shape[d];
    view.strides[d] = view.shape[d] < 2 ? 1 : packedStride;
    packedStride *= view.shape[d];
  }
}

// The address of \p tensor, a plain tensor; null when it cannot be read.
static void *addressOf(PyObject *tensor, const Torch &torch) {
  py::object address = torch.dataPtr.read(tensor);
  if (!address)
    return nullptr;
  void *data = PyLong_AsVoidPtr(address.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return nullptr;
  }
  return data;
}

// An output read like any array (from a q read through DLPack, or made
// another type by a TorchFunctionMode) must still be what was asked for:
// the kernels write all of it.
static void checkMade(const ArrayView &made, const ArrayView &expected) {
  bool fits = made.ndim == expected.ndim && made.type == expected.type &&
              made.onCuda == expected.onCuda &&
              made.deviceId == expected.deviceId && made.packed();
  for (int d = 0; fits && d < made.ndim; ++d)
    fits = made.shape[d] == expected.shape[d];
  if (!fits)
    throw py::value_error("out: the tensor torch made for it is not a packed "
                          "one like q's (a TorchFunctionMode's?): pass out=");
}

py::object python::newTorchOutput(py::handle q, const ArrayView &qView,
                                  int64_t headDimV,
                                  std::optional<intptr_t> stream,
                                  ArrayView &view) {
  Torch &torch = torchObjects();
  py::object out = emptyOutput(q, qView, headDimV, torch);
  // Where q was read directly and a plain tensor came back, only the new
  // tensor's address is new: torch's factories make what they are asked.
  void *data = nullptr;
  if (qView.source && torch.isTensor(out.ptr()))
    data = addressOf(out.ptr(), torch);
  packedLike(view, qView, headDimV, data);
  if (data) {
    view.source = out;
    return out;
  }
  ArrayView made = importArray(out, "out", stream);
  checkMade(made, view);
  view = std::move(made);
  return out;
}
