//===- CacheFile.h - The on-disk format of one cached artifact ------------===//
//
// One file per (kernel name, fingerprint), named `<name>-<16 hex>.bin` where
// the hex digits are the xxh3 hash of the fingerprint. The file is a header
// followed by the payload; every integer is little-endian:
//
//   offset  size  field
//        0     8  magic "FMHAJITC"
//        8     4  format version (kCacheFormatVersion)
//       12     4  key size K
//       16     8  payload size P
//       24     8  xxh3 hash of the payload
//       32     K  key text: name '\n' fingerprint
//     32+K     P  payload (host object, PTX text or .hsaco)
//
// The full key text is stored because the file name only carries 64 bits of
// the fingerprint: a collision must read as a miss, never as the wrong code.
// Files are written under a unique temporary name and renamed into place, so
// readers see either nothing or a complete file; the hash catches the rest
// (a torn write after a power loss, a flipped bit, an edited file).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <string>

namespace fmhajit {

inline constexpr uint32_t kCacheFormatVersion = 1;

/// The text a file stores to identify its key: `name '\n' fingerprint`.
std::string cacheKeyText(llvm::StringRef name, llvm::StringRef fingerprint);

/// The file name (no directory) that holds (\p name, \p fingerprint).
std::string cacheFileName(llvm::StringRef name, llvm::StringRef fingerprint);

/// The file whose modification time is the last time pruning scanned the
/// directory (CachePruner.h); it is empty.
inline constexpr llvm::StringLiteral kPruneStampName = "fmhajit-prune.stamp";

/// What a directory entry is, judged by its name alone.
enum class CacheFileKind {
  Foreign,    ///< not ours: never touched
  Artifact,   ///< `<name>-<16 hex>.bin`
  Temp,       ///< `<name>-<16 hex>.bin.tmp-<random>`, a write in progress or
              ///< left behind by a killed process
  PruneStamp, ///< kPruneStampName
};

/// Classifies \p fileName (no directory).
CacheFileKind classifyCacheFileName(llvm::StringRef fileName);

/// Builds the header that precedes \p payload in a file for \p keyText.
std::string encodeCacheHeader(llvm::StringRef keyText, llvm::StringRef payload);

/// Checks \p file (a whole file's bytes) against \p keyText and returns its
/// payload, a view into \p file. The error says what is wrong (bad magic,
/// size mismatch, hash mismatch, key mismatch...), for a warning.
llvm::Expected<llvm::StringRef> decodeCacheFile(llvm::StringRef file,
                                                llvm::StringRef keyText);

/// Writes \p header then \p payload to \p path atomically: into a unique
/// temporary file in the same directory, which is then renamed over \p path.
/// On failure the temporary file is removed and \p path is untouched.
llvm::Error writeCacheFile(llvm::StringRef path, llvm::StringRef header,
                           llvm::StringRef payload);

} // namespace fmhajit
