//===- AttentionFunction.cpp - fmhajit.attention as a C function ----------===//
#include "python/src/AttentionFunction.h"
#include "python/src/AttentionCall.h"
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>

using namespace fmhajit;
using namespace fmhajit::python;

namespace {
/// fmhajit.attention's parameters, in its signature's order: q, k and v
/// positional, the rest keyword-only. makeAttentionFunction checks them
/// against the Python def's.
constexpr const char *kParams[] = {"q",
                                   "k",
                                   "v",
                                   "causal",
                                   "window",
                                   "softcap",
                                   "alibi_slopes",
                                   "scale",
                                   "return_lse",
                                   "cu_seqlens_q",
                                   "cu_seqlens_k",
                                   "out",
                                   "lse",
                                   "threads",
                                   "target",
                                   "kernel",
                                   "cache_dir",
                                   "dropout_p",
                                   "dropout_seed",
                                   "dropout_offset",
                                   "sinks",
                                   "attn_bias",
                                   "variant",
                                   "variant_tensors"};
constexpr Py_ssize_t kParamCount = std::size(kParams);
constexpr Py_ssize_t kPositional = 3;
constexpr Py_ssize_t kDropoutSeed = 18; // and dropout_offset after it
static_assert(kParamCount <= 32 && kParamCount == kCommonCallArgs + 2);

/// What the function reads, made once per package (strong references,
/// kept for the process: the function lives as long).
struct State {
  PyObject *python = nullptr;  // the def: errors of binding
  PyObject *globals = nullptr; // the package's: _compiling, _any_attention
  PyObject *names[kParamCount] = {};    // interned
  PyObject *defaults[kParamCount] = {}; // nullptr for q, k, v
  PyObject *compiling = nullptr, *beforeTorch = nullptr,
           *anyAttention = nullptr, *torch = nullptr; // interned names
};
State *state = nullptr;

/// _compiling's answer outside a trace, registered by answerCompilingBy
/// (strong references; null: none).
struct FlagAnswer {
  PyObject *ask = nullptr;
  PyObject *globals = nullptr; // null: false
  PyObject *name = nullptr;
};
FlagAnswer flagAnswer;
} // namespace

// The parameter a keyword names, or -1. Names from the call's code are
// interned, as ours are; a **dict's keys may not be.
static Py_ssize_t paramNamed(PyObject *name) {
  for (Py_ssize_t p = 0; p < kParamCount; ++p)
    if (state->names[p] == name)
      return p;
  if (!PyUnicode_Check(name))
    return -1;
  for (Py_ssize_t p = 0; p < kParamCount; ++p)
    if (PyUnicode_Compare(state->names[p], name) == 0)
      return p;
  return -1;
}

// The arguments in the signature's order (borrowed), defaults filled in;
// false where Python would raise a TypeError.
static bool bind(PyObject *const *args, size_t nargsf, PyObject *kwnames,
                 PyObject **bound) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs > kPositional)
    return false;
  uint32_t given = 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    bound[i] = args[i];
    given |= 1u << i;
  }
  Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < keywords; ++i) {
    Py_ssize_t p = paramNamed(PyTuple_GET_ITEM(kwnames, i));
    if (p < 0 || (given & (1u << p)))
      return false;
    bound[p] = args[nargs + i];
    given |= 1u << p;
  }
  for (Py_ssize_t p = 0; p < kParamCount; ++p) {
    if (given & (1u << p))
      continue;
    if (!state->defaults[p])
      return false; // q, k or v missing
    bound[p] = state->defaults[p];
  }
  return true;
}

// A new reference to the package's global `name`, or nullptr with an
// error set.
static PyObject *packageGlobal(PyObject *name) {
  PyObject *value = PyDict_GetItemWithError(state->globals, name);
  if (!value && !PyErr_Occurred())
    PyErr_Format(PyExc_RuntimeError, "internal: fmhajit.%U is missing", name);
  Py_XINCREF(value);
  return value;
}

// \p ask's answer read from its flag (answerCompilingBy): 1, 0, -1 with an
// error set, or -2 where it must be called.
static int flagAnswerOf(PyObject *ask) {
  if (ask != flagAnswer.ask)
    return -2;
  if (!flagAnswer.globals)
    return 0;
  PyObject *flag = PyDict_GetItemWithError(flagAnswer.globals, flagAnswer.name);
  if (!flag)
    return PyErr_Occurred() ? -1 : -2;
  return PyObject_IsTrue(flag);
}

// fmhajit/__init__.py's `_compiling()`, not asked before torch is loaded
// (it would answer false), and read rather than called where it answers by
// a flag: 1, 0, or -1 with an error set.
static int compiling() {
  PyObject *ask = packageGlobal(state->compiling);
  if (!ask)
    return -1;
  if (PyDict_GetItemWithError(state->globals, state->beforeTorch) == ask &&
      !PyDict_GetItemWithError(PyImport_GetModuleDict(), state->torch)) {
    Py_DECREF(ask);
    return PyErr_Occurred() ? -1 : 0;
  }
  int flag = flagAnswerOf(ask);
  if (flag != -2) {
    Py_DECREF(ask);
    return flag;
  }
  PyObject *answer = PyObject_CallNoArgs(ask);
  Py_DECREF(ask);
  if (!answer)
    return -1;
  int truth = PyObject_IsTrue(answer);
  Py_DECREF(answer);
  return truth;
}

static PyObject *attention(PyObject *, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames) {
  PyObject *bound[kParamCount];
  if (!bind(args, nargsf, kwnames, bound))
    return PyObject_Vectorcall(state->python, args, nargsf, kwnames);
  int tracing = compiling();
  if (tracing < 0)
    return nullptr;
  if (!tracing) {
    PyObject *common[kCommonCallArgs];
    std::copy(bound, bound + kDropoutSeed, common);
    std::copy(bound + kDropoutSeed + 2, bound + kParamCount,
              common + kDropoutSeed);
    PyObject *made = runCommonCall(common);
    if (made != Py_NotImplemented)
      return made;
    Py_DECREF(made);
  }
  PyObject *any = packageGlobal(state->anyAttention);
  if (!any)
    return nullptr;
  PyObject *made = PyObject_Vectorcall(any, bound, kParamCount, nullptr);
  Py_DECREF(any);
  return made;
}

// A new reference to getattr(object, name), or nullptr with an error set.
static PyObject *attribute(PyObject *object, const char *name) {
  return PyObject_GetAttrString(object, name);
}

// Whether the def's parameters are kParams (q, k, v positional), with an
// error set where not.
static bool sameParameters(PyObject *python) {
  PyObject *code = attribute(python, "__code__");
  PyObject *names = code ? attribute(code, "co_varnames") : nullptr;
  PyObject *positional = code ? attribute(code, "co_argcount") : nullptr;
  PyObject *keywords = code ? attribute(code, "co_kwonlyargcount") : nullptr;
  bool same = names && positional && keywords && PyTuple_Check(names) &&
              PyLong_AsSsize_t(positional) == kPositional &&
              PyLong_AsSsize_t(keywords) == kParamCount - kPositional &&
              PyTuple_GET_SIZE(names) >= kParamCount;
  for (Py_ssize_t p = 0; same && p < kParamCount; ++p)
    same = PyUnicode_Check(PyTuple_GET_ITEM(names, p)) &&
           PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, p),
                                            kParams[p]) == 0;
  Py_XDECREF(code);
  Py_XDECREF(names);
  Py_XDECREF(positional);
  Py_XDECREF(keywords);
  if (!same && !PyErr_Occurred())
    PyErr_SetString(PyExc_TypeError,
                    "internal: the Python attention's parameters are not "
                    "the ones python/src/AttentionFunction.cpp binds");
  return same;
}

// The state of a function made from the def: its defaults, the names.
static State *stateFor(PyObject *python, PyObject *module) {
  PyObject *defaults = attribute(python, "__kwdefaults__");
  if (!defaults || !PyDict_Check(defaults)) {
    Py_XDECREF(defaults);
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_TypeError, "internal: no keyword defaults");
    return nullptr;
  }
  auto *made = new State;
  made->python = Py_NewRef(python);
  made->globals = Py_NewRef(PyModule_GetDict(module));
  for (Py_ssize_t p = 0; p < kParamCount; ++p) {
    made->names[p] = PyUnicode_InternFromString(kParams[p]);
    if (p >= kPositional)
      made->defaults[p] = Py_XNewRef(PyDict_GetItem(defaults, made->names[p]));
  }
  Py_DECREF(defaults);
  made->compiling = PyUnicode_InternFromString("_compiling");
  made->beforeTorch = PyUnicode_InternFromString("_compiling_before_torch");
  made->anyAttention = PyUnicode_InternFromString("_any_attention");
  made->torch = PyUnicode_InternFromString("torch");
  return made;
}

// "attention(q, k, v, *, causal=False, ...)\n--\n\n" and the def's doc:
// CPython reads the first part as __text_signature__ and gives the rest as
// __doc__.
static bool appendDoc(std::string &doc, PyObject *python) {
  doc = "attention(";
  for (Py_ssize_t p = 0; p < kParamCount; ++p) {
    doc += p == 0 ? "" : p == kPositional ? ", *, " : ", ";
    doc += kParams[p];
    if (!state->defaults[p])
      continue;
    PyObject *repr = PyObject_Repr(state->defaults[p]);
    const char *text = repr ? PyUnicode_AsUTF8(repr) : nullptr;
    if (text)
      doc += std::string("=") + text;
    Py_XDECREF(repr);
    if (!text)
      return false;
  }
  doc += ")\n--\n\n";
  PyObject *text = attribute(python, "__doc__");
  if (text && PyUnicode_Check(text))
    doc += PyUnicode_AsUTF8(text);
  Py_XDECREF(text);
  return !PyErr_Occurred();
}

PyObject *python::makeAttentionFunction(PyObject *pythonDef, PyObject *module) {
  if (!PyModule_Check(module)) {
    PyErr_SetString(PyExc_TypeError, "internal: expected the package");
    return nullptr;
  }
  if (!sameParameters(pythonDef))
    return nullptr;
  State *made = stateFor(pythonDef, module);
  if (!made)
    return nullptr;
  // A second package (importlib.reload) replaces the first's state; a
  // function made before reads the new one, which is the same package's.
  state = made;
  // The method definition and its doc live as long as the function: for
  // the process.
  auto *doc = new std::string;
  if (!appendDoc(*doc, pythonDef))
    return nullptr;
  auto *method = new PyMethodDef{
      "attention",
      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(attention)),
      METH_FASTCALL | METH_KEYWORDS, doc->c_str()};
  PyObject *name = PyModule_GetNameObject(module);
  PyObject *function = name ? PyCFunction_NewEx(method, module, name) : nullptr;
  Py_XDECREF(name);
  return function;
}

bool python::answerCompilingBy(PyObject *ask, PyObject *globals,
                               PyObject *name) {
  if (globals != Py_None &&
      (!PyDict_Check(globals) || !PyUnicode_Check(name))) {
    PyErr_SetString(PyExc_TypeError,
                    "internal: answer_compiling takes a function, and a dict "
                    "and a str or None");
    return false;
  }
  FlagAnswer made{Py_NewRef(ask), nullptr, nullptr};
  if (globals != Py_None) {
    made.globals = Py_NewRef(globals);
    made.name = Py_NewRef(name);
  }
  std::swap(made, flagAnswer);
  Py_XDECREF(made.ask);
  Py_XDECREF(made.globals);
  Py_XDECREF(made.name);
  return true;
}
