//===- NumpyArray.cpp - NumPy arrays the module makes ---------------------===//
#include "python/src/NumpyArray.h"

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

namespace {
/// NumPy's objects the module compares with and calls, found once (the GIL
/// serializes every caller; strong references: NumPy is never unloaded).
struct Numpy {
  PyObject *ndarray = nullptr, *empty = nullptr, *dtypeName = nullptr;
  /// The dtypes of ElementType F32, F16 and BF16 (uint16 bits), in order:
  /// NumPy's built-in dtypes are one object each.
  PyObject *dtypes[3] = {};

  /// Whether NumPy is imported and its objects found.
  bool find() {
    if (ndarray)
      return true;
    static PyObject *name = PyUnicode_InternFromString("numpy");
    PyObject *numpy = importedModule(name);
    if (!numpy)
      return false;
    py::handle module(numpy);
    py::object dtype = module.attr("dtype");
    const char *dtypeNames[] = {"float32", "float16", "uint16"};
    for (unsigned i = 0; i < 3; ++i)
      dtypes[i] = keep(dtype(dtypeNames[i]));
    empty = keep(module.attr("empty"));
    dtypeName = PyUnicode_InternFromString("dtype");
    ndarray = keep(module.attr("ndarray"));
    return true;
  }

private:
  static PyObject *keep(py::object object) { return object.release().ptr(); }
};
} // namespace

static Numpy &numpyObjects() {
  static Numpy *numpy = new Numpy(); // never destroyed: it holds references
  return *numpy;
}

bool python::isNumpyArray(py::handle array) {
  Numpy &numpy = numpyObjects();
  return numpy.find() &&
         reinterpret_cast<PyObject *>(Py_TYPE(array.ptr())) == numpy.ndarray;
}

bool python::isDirectNumpyArray(py::handle array) {
  if (!isNumpyArray(array))
    return false;
  const Numpy &numpy = numpyObjects();
  PyObject *dtype = PyObject_GetAttr(array.ptr(), numpy.dtypeName);
  if (!dtype) {
    PyErr_Clear();
    return false;
  }
  bool direct = false;
  for (PyObject *d : numpy.dtypes)
    direct = direct || dtype == d;
  Py_DECREF(dtype);
  return direct;
}

static PyObject *dtypeOf(const ArrayView &view, const Numpy &numpy) {
  switch (view.type) {
  case ElementType::F32:
    return numpy.dtypes[0];
  case ElementType::F16:
    return numpy.dtypes[1];
  default: // a NumPy operand that passed the checks is bf16 bits otherwise
    return numpy.dtypes[2];
  }
}

py::object python::newNumpyOutput(const ArrayView &qView, int64_t headDimV,
                                  ArrayView &view) {
  const Numpy &numpy = numpyObjects();
  py::tuple shape(qView.ndim);
  for (int d = 0; d < qView.ndim; ++d)
    shape[d] = py::int_(d == qView.ndim - 1 ? headDimV : qView.shape[d]);
  PyObject *args[] = {shape.ptr(), dtypeOf(qView, numpy)};
  PyObject *made = PyObject_Vectorcall(numpy.empty, args, 2, nullptr);
  if (!made)
    throw py::error_already_set();
  auto out = py::reinterpret_steal<py::object>(made);
  // NumPy's own export, as for any array: 50 ns, and it checks what came.
  view = importArray(out, "out", std::nullopt);
  return out;
}
