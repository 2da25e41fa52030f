//===- NumpyArray.h - NumPy arrays the module makes -----------------------===//
//
// fmhajit.attention returns NumPy arrays for NumPy inputs. Its common call
// runs in one C++ entry (AttentionCall.h), which makes the output here,
// after the inputs are checked, as the Python layer made it before:
// np.empty(q's shape with v's head_dim, q's dtype), packed. Found through
// sys.modules: the package imports NumPy before its compiled half.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "python/src/ArrayView.h"

namespace fmhajit::python {

/// Whether \p array is a numpy.ndarray (that exact type).
bool isNumpyArray(pybind11::handle array);

/// Whether \p array is a numpy.ndarray of float32, float16 or uint16
/// (bfloat16 bits): the dtypes fmhajit reads as they are. ml_dtypes'
/// bfloat16 and every other dtype take the Python path (fmhajit/__init__.py).
bool isDirectNumpyArray(pybind11::handle array);

/// A new output for \p q, a NumPy array imported as \p qView: packed, of
/// q's dtype, q's shape with head_dim \p headDimV. Its view goes into
/// \p view.
pybind11::object newNumpyOutput(const ArrayView &qView, int64_t headDimV,
                                ArrayView &view);

} // namespace fmhajit::python
