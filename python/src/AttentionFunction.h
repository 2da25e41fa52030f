//===- AttentionFunction.h - fmhajit.attention as a C function ------------===//
//
// fmhajit.attention itself is a C function of CPython's vectorcall
// convention with keywords (METH_FASTCALL | METH_KEYWORDS), so that a call
// on a cached plan runs no Python frame at all (issue 15). It binds its
// arguments to the signature of the Python def it is made from
// (fmhajit/__init__.py's attention, kept as fmhajit._python_attention):
// the same names, the same defaults (that def's objects), q, k and v
// positional or keyword, the rest keyword-only. Then:
//
//   - where torch is loaded, it asks fmhajit._compiling (torch.compile
//     must see the op; before torch is imported nothing compiles, so the
//     NumPy-only call asks nothing). This function never runs inside a
//     Dynamo trace (Dynamo traces the def in its place), and outside one
//     fmhajit._torch's compiling answers with a flag: while _compiling is
//     that function, the flag is read instead of the function called (the
//     answer fmhajit._torch registers through answerCompilingBy);
//   - not compiling, it runs the common call (AttentionCall.h);
//   - otherwise, or where the common call declines, it calls
//     fmhajit._any_attention with the 24 bound arguments in the
//     signature's order: the Python path, as before.
//
// A call it cannot bind (an unknown keyword, an argument given twice, one
// missing, a fourth positional one) goes as it came to the Python def,
// which raises Python's own TypeError, worded as before for every Python
// version. The doc is the def's, with a text signature in front so that
// inspect.signature reads the def's parameters. torch.compile cannot trace
// a C function: fmhajit/_torch.py registers the def as its stand-in in
// graphs (torch.compiler.substitute_in_graph).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Python.h>

namespace fmhajit::python {

/// fmhajit.attention, made from the Python def `pythonDef` (whose
/// parameters must be the ones this file binds: a TypeError otherwise) of
/// the package `module`, whose globals it reads at each call. A new
/// reference, or nullptr with the error set.
PyObject *makeAttentionFunction(PyObject *pythonDef, PyObject *module);

/// Has fmhajit.attention, while the package's _compiling is \p ask, answer
/// it outside a trace without calling it: with the truth of \p globals'
/// entry \p name (a dict and a str: the global that \p ask returns), or
/// false where \p globals is None. A missing entry calls \p ask. The last
/// answer registered replaces the one before. Returns false with a
/// TypeError set for arguments of other types.
bool answerCompilingBy(PyObject *ask, PyObject *globals, PyObject *name);

} // namespace fmhajit::python
