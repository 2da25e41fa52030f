//===- StatusError.cpp - Status codes -> Python exception types -----------===//
#include "python/src/StatusError.h"
#include <pybind11/pybind11.h>

namespace py = pybind11;
using namespace fmhajit;

static PyObject *exceptionTypeFor(api::StatusCode code) {
  switch (code) {
  case api::StatusCode::InvalidArgument:
    return PyExc_ValueError;
  case api::StatusCode::Unsupported:
    return PyExc_NotImplementedError;
  case api::StatusCode::IoError:
    return PyExc_OSError;
  default:
    return PyExc_RuntimeError;
  }
}

void python::raiseStatus(const api::Status &status) {
  PyErr_SetString(exceptionTypeFor(status.code()), status.message().c_str());
  throw py::error_already_set();
}
