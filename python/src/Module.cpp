//===- Module.cpp - The extension module fmhajit._fmhajit -----------------===//
//
// The compiled half of the Python package: thin bindings of the public C++
// API (include/fmhajit/). The package's __init__.py gives them their
// Python signatures, allocates outputs (attention makes a plain tensor's
// or a NumPy array's out itself: Calls.h) and reads PyTorch's stream;
// fmhajit.attention itself is a C function made here from its Python def
// (AttentionFunction.h), which runs the common call (AttentionCall.h).
//
//===----------------------------------------------------------------------===//
#include "fmhajit/Fmhajit.h"
#include "fmhajit/Specs.h"
#include "python/src/AttentionCall.h"
#include "python/src/AttentionFunction.h"
#include "python/src/Calls.h"
#include "python/src/StatusError.h"
#include "specs/Version.h"
#include <pybind11/stl.h>

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

// Each call runs without the GIL: validation is quick, but compiling a
// kernel takes milliseconds to seconds.
template <typename F> static auto withoutGil(F &&f) {
  py::gil_scoped_release release;
  return f();
}

static py::tuple specTuple(const api::SpecInfo &info) {
  return py::make_tuple(info.name, info.resolved, info.json);
}

static py::tuple validate(const std::string &spec) {
  return specTuple(
      valueOrRaise(withoutGil([&] { return api::validateSpec(spec); })));
}

static py::tuple decode(const std::string &name) {
  return specTuple(
      valueOrRaise(withoutGil([&] { return api::decodeName(name); })));
}

// Text for every stage but obj, whose bytes are a binary.
static py::object compile(const std::string &spec, const std::string &emit,
                          const std::string &target) {
  std::string out = valueOrRaise(
      withoutGil([&] { return api::compileSpec(spec, emit, target); }));
  if (emit == "obj")
    return py::bytes(out);
  return py::str(out);
}

// A profile's kernels into the kernel cache, side by side (api::warmup).
static void warmup(const std::string &profile, const std::string &target,
                   const std::string &cacheDir) {
  checkStatus(
      withoutGil([&] { return api::warmup(profile, target, cacheDir); }));
}

static api::DType dtypeNamed(const std::string &name) {
  if (name == "fp32")
    return api::DType::F32;
  if (name == "fp16")
    return api::DType::F16;
  if (name == "bf16")
    return api::DType::BF16;
  if (name == "fp8_e4m3")
    return api::DType::F8E4M3;
  if (name == "fp8_e5m2")
    return api::DType::F8E5M2;
  throw py::value_error("dtype " + name +
                        ": use fp32, fp16, bf16, fp8_e4m3 or fp8_e5m2");
}

static py::tuple accuracy(const std::string &input, const std::string &out,
                          bool gradients) {
  api::Accuracy a = valueOrRaise(
      api::accuracyFor(dtypeNamed(input), dtypeNamed(out), gradients));
  return py::make_tuple(a.relL2, a.maxAbs, a.lseRel);
}

static py::object makeAttention(py::object python, py::object package) {
  PyObject *function = makeAttentionFunction(python.ptr(), package.ptr());
  if (!function)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(function);
}

static void answerCompiling(py::object ask, py::object globals,
                            py::object name) {
  if (!answerCompilingBy(ask.ptr(), globals.ptr(), name.ptr()))
    throw py::error_already_set();
}

PYBIND11_MODULE(_fmhajit, m) {
  m.doc() = "fmhajit's compiled half; use the package fmhajit";
  m.attr("__version__") = FMHAJIT_VERSION;
  // A C function of its own, not pybind11's: AttentionCall.h says why.
  m.add_object("attention_call",
               py::reinterpret_steal<py::object>(
                   PyCFunction_NewEx(&attentionCallMethod, nullptr, m.ptr())));
  m.def("make_attention", &makeAttention);
  m.def("answer_compiling", &answerCompiling);
  m.def("attention", &runAttention);
  m.def("attention_with_variant", &runAttentionWithVariant);
  m.def("backward", &runBackward);
  m.def("plan", &describePlan);
  m.def("validate", &validate);
  m.def("decode", &decode);
  m.def("compile", &compile);
  m.def("warmup", &warmup);
  m.def("accuracy", &accuracy);
  m.def("cached_plans", &cachedPlans);
  m.def("clear_plans", &clearPlans);
}
