//===- Npy.h - NumPy .npy files of float32 --------------------------------===//
//
// The format `fmhajit run --save` writes so that any tool can recompute a
// run: .npy version 1.0, dtype '<f4', C order. The header is padded with
// spaces and a newline so that the data starts at a multiple of 64 bytes,
// as NumPy itself writes it. The reader accepts what the writer writes
// (and version 2.0 headers); it is for tests and tools, not general NumPy.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <string>
#include <vector>

namespace fmhajit {

/// A float32 array read from a .npy file.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data; ///< C order
};

/// The complete .npy v1.0 preamble (magic, version, length, padded header
/// dictionary) for a float32 array of \p shape.
std::string npyHeader(llvm::ArrayRef<int64_t> shape);

/// Writes \p data, a C-order float32 array of \p shape, to \p path. I/O
/// failures are ErrorKind::Io errors naming the path.
/// Writes \p path with \p write through llvm::writeToOutput: a temporary
/// file renamed into place, so a failed or interrupted write leaves no
/// half-written file. A failure is an ErrorKind::Io error naming the path.
llvm::Error
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<void(llvm::raw_ostream &)> write);

llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<float> data,
                     llvm::ArrayRef<int64_t> shape);

/// Reads a little-endian float32, C-order .npy file.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);

} // namespace fmhajit
