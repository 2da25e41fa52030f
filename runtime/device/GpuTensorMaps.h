//===- GpuTensorMaps.h - A TMA kernel's tensor maps, launch by launch -----===//
//
// A kernel that loads by TMA (usesTensorMaps) takes the Q, K and V tensor
// maps of TensorMapBoxes.h as its second parameter. Their dims, strides and
// boxes depend on the problem alone, their base addresses on the call. So a
// plan encodes them once when it loads, at placeholder bases
// (prepareTensorMaps: cuTensorMapEncodeTiled three times), and each of its
// launches copies them and writes in the call's bases (bindTensorMaps:
// cuTensorMapReplaceAddress three times), instead of encoding all three
// again (encodeTensorMaps, for launches without a plan). Both ways give the
// kernel the same maps: the driver documents a replaced address as an
// encoded one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <optional>

namespace fmhajit {

class GpuDriver;

/// Encodes the maps of \p args (TensorMapBoxes.h) into \p maps; a Usage
/// error names a pointer or stride TMA cannot address.
llvm::Error encodeTensorMaps(GpuDriver &driver, const KernelSpec &spec,
                             const KernelArgs &args, TensorMaps &maps);

/// The maps of \p args, whose tensor pointers are ignored, encoded at
/// placeholder bases for bindTensorMaps. std::nullopt when \p spec takes no
/// maps or they cannot be prepared (strides TMA cannot address, a driver
/// that cannot replace addresses): encodeTensorMaps then does the work,
/// and reports the error, at each launch.
std::optional<TensorMaps> prepareTensorMaps(GpuDriver &driver,
                                            const KernelSpec &spec,
                                            const KernelArgs &args);

/// \p prepared (from prepareTensorMaps for the same problem) with the Q, K
/// and V pointers of \p args as bases, into \p maps: what encodeTensorMaps
/// gives, with the same error for a pointer TMA cannot address.
llvm::Error bindTensorMaps(GpuDriver &driver, const KernelSpec &spec,
                           const TensorMaps &prepared, const KernelArgs &args,
                           TensorMaps &maps);

} // namespace fmhajit
