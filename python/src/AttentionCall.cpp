//===- AttentionCall.cpp - fmhajit.attention's common call in one entry --===//
#include "python/src/AttentionCall.h"
#include "python/src/Calls.h"
#include "python/src/ExchangeApi.h"
#include "python/src/NumpyArray.h"
#include "python/src/TorchTensor.h"
#include <initializer_list>
#include <optional>

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

namespace {
/// attention_call's arguments, in AttentionCall.h's order.
enum Arg : Py_ssize_t {
  ArgQ,
  ArgK,
  ArgV,
  ArgCausal,
  ArgWindow,
  ArgSoftcap,
  ArgAlibiSlopes,
  ArgScale,
  ArgReturnLse,
  ArgCuSeqlensQ,
  ArgCuSeqlensK,
  ArgOut,
  ArgLse,
  ArgThreads,
  ArgTarget,
  ArgKernel,
  ArgCacheDir,
  ArgDropoutP,
  ArgSinks,
  ArgAttnBias,
  ArgVariant,
  ArgVariantTensors,
  ArgCount
};
static_assert(ArgCount == kCommonCallArgs);
} // namespace

// float(value or 0.0) for None, a float or an int; nullopt for anything
// else (and an int too large for a double), left to the Python path.
static std::optional<float> plainFloat(PyObject *value) {
  if (value == Py_None)
    return 0.0f;
  if (PyFloat_CheckExact(value))
    return float(PyFloat_AS_DOUBLE(value));
  if (!PyLong_CheckExact(value))
    return std::nullopt;
  double d = PyLong_AsDouble(value);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return float(d);
}

// int(value or 0) for None or an int (not a bool).
static std::optional<int64_t> plainInt(PyObject *value) {
  if (value == Py_None)
    return 0;
  if (!PyLong_CheckExact(value))
    return std::nullopt;
  int overflow = 0;
  long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow || (n == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return std::nullopt;
  }
  return n;
}

// value or "" for None or a str.
static bool plainString(PyObject *value, std::string &text) {
  if (value == Py_None)
    return true;
  if (!PyUnicode_CheckExact(value))
    return false;
  Py_ssize_t size = 0;
  const char *utf8 = PyUnicode_AsUTF8AndSize(value, &size);
  if (!utf8) {
    PyErr_Clear(); // a lone surrogate: the Python path says what is wrong
    return false;
  }
  text.assign(utf8, size_t(size));
  return true;
}

// Whether dropout_p leaves dropout off (`if dropout_p:` is false): False,
// or a float or an int of 0 (whose truth cannot fail).
static bool noDropout(PyObject *p) {
  return (p == Py_False || PyFloat_CheckExact(p) || PyLong_CheckExact(p)) &&
         PyObject_IsTrue(p) == 0;
}

// The keywords of a common call into \p kw, as fmhajit/__init__.py's
// _make_keywords reads them (streams None), all but threads (call());
// false where the call is not a common one.
static bool commonKeywords(PyObject *const *args, CallKeywords &kw) {
  for (Arg a : {ArgWindow, ArgAlibiSlopes, ArgCuSeqlensQ, ArgCuSeqlensK,
                ArgSinks, ArgAttnBias, ArgVariant, ArgVariantTensors})
    if (args[a] != Py_None)
      return false;
  PyObject *causal = args[ArgCausal], *returnLse = args[ArgReturnLse];
  if ((causal != Py_True && causal != Py_False) ||
      (returnLse != Py_False &&
       (returnLse != Py_True || args[ArgLse] == Py_None)) ||
      !noDropout(args[ArgDropoutP]))
    return false;
  std::optional<float> softcap = plainFloat(args[ArgSoftcap]);
  std::optional<float> scale = plainFloat(args[ArgScale]);
  std::optional<int64_t> threads = plainInt(args[ArgThreads]);
  if (!softcap || !scale || !threads ||
      !plainString(args[ArgTarget], kw.options.target) ||
      !plainString(args[ArgKernel], kw.options.kernel) ||
      !plainString(args[ArgCacheDir], kw.options.cacheDir))
    return false;
  kw.mask = causal == Py_True ? api::Mask::CausalBottomRight : api::Mask::None;
  kw.softcap = *softcap;
  kw.scale = *scale;
  return true;
}

static bool plainOrNone(PyObject *array) {
  return array == Py_None || isPlainTensor(array);
}

// Whether the arrays are a common call's (AttentionCall.h): nullopt where
// not; else whether q, k and v are plain tensors that do not require grad
// (read here, so that reading them reads it no more).
static std::optional<GradKnown> commonArrays(PyObject *const *args) {
  py::handle q = args[ArgQ];
  if (isDirectNumpyArray(q))
    return GradKnown::No;
  if (!isPlainTensor(q) || !isPlainTensor(args[ArgK]) ||
      !isPlainTensor(args[ArgV]) || !plainOrNone(args[ArgOut]) ||
      !plainOrNone(args[ArgLse]))
    return std::nullopt;
  for (Arg a : {ArgQ, ArgK, ArgV})
    if (requiresGrad(args[a]))
      return std::nullopt;
  // Without the exchange API a CUDA call needs torch's stream, which the
  // Python path passes.
  if (!exchangeApiOf(q) && isCudaTensor(q))
    return std::nullopt;
  return GradKnown::NotRequired;
}

// The call, or NotImplemented; raises as the Python path would.
static py::object call(PyObject *const *args) {
  CallKeywords kw;
  std::optional<GradKnown> grad =
      commonKeywords(args, kw) ? commonArrays(args) : std::nullopt;
  if (!grad)
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  // Checked once the call is known to be common: the Python path raises
  // its own errors (an array it cannot make results for) before this one.
  kw.options.threads = threadCount(*plainInt(args[ArgThreads]));
  py::object out = runCommonAttention(args[ArgQ], args[ArgK], args[ArgV],
                                      args[ArgOut], args[ArgLse], kw, *grad);
  if (args[ArgReturnLse] == Py_True)
    return py::make_tuple(out, py::handle(args[ArgLse]));
  return out;
}

// pybind11's translation of what the module throws, which its dispatcher
// would do for a function it wraps.
PyObject *python::runCommonCall(PyObject *const *args) {
  try {
    return call(args).release().ptr();
  } catch (py::error_already_set &e) {
    e.restore();
  } catch (py::builtin_exception &e) {
    e.set_error();
  } catch (std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

static PyObject *attentionCall(PyObject *, PyObject *const *args,
                               Py_ssize_t nargs) {
  if (nargs != ArgCount) {
    PyErr_Format(PyExc_TypeError,
                 "internal: attention_call takes %d arguments; got %zd",
                 int(ArgCount), nargs);
    return nullptr;
  }
  return runCommonCall(args);
}

PyMethodDef python::attentionCallMethod = {
    "attention_call",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(attentionCall)),
    METH_FASTCALL,
    "fmhajit.attention's common call (python/src/AttentionCall.h): out, "
    "(out, lse), or NotImplemented for the Python path"};
