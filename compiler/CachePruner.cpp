//===- CachePruner.cpp - Keeping the disk cache under its size cap --------===//
#include "compiler/CachePruner.h"
#include "compiler/CacheFile.h"
#include "specs/Errors.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace fmhajit;
namespace fs = llvm::sys::fs;

namespace {
/// One artifact file, as the scan saw it.
struct Entry {
  llvm::sys::TimePoint<> used; ///< access time
  uint64_t size;
  std::string path;

  /// Pruning order: least recently used first; among equals the larger
  /// first, which frees the room with fewer misses (llvm::pruneCache's
  /// order too).
  bool operator<(const Entry &other) const {
    return std::tie(used, other.size, path) <
           std::tie(other.used, size, other.path);
  }
};
} // namespace

/// The shift of a size suffix: "" and "b" are bytes; k, m, g, t (with an
/// optional "b" or "ib") are powers of 1024.
static std::optional<unsigned> unitShift(llvm::StringRef unit) {
  std::string lower = unit.lower();
  llvm::StringRef rest(lower);
  if (rest.empty() || rest == "b")
    return 0;
  if (!rest.consume_back("ib"))
    rest.consume_back("b");
  size_t at = rest.size() == 1 ? llvm::StringRef("kmgt").find(rest[0])
                               : llvm::StringRef::npos;
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  return unsigned(10 * (at + 1));
}

llvm::Expected<uint64_t> fmhajit::parseCacheSize(llvm::StringRef text) {
  llvm::StringRef trimmed = text.trim();
  llvm::StringRef digits = trimmed.take_while(llvm::isDigit);
  std::optional<unsigned> shift = unitShift(trimmed.drop_front(digits.size()));
  uint64_t count = 0;
  if (digits.empty() || !shift)
    return makeError(ErrorKind::Usage,
                     "'" + text +
                         "' is not a size: use a number of bytes, or a number "
                         "with K, M, G or T (powers of 1024), such as 512M "
                         "or 2G");
  // getAsInteger fails on overflow, as does the shift check below.
  if (digits.getAsInteger(10, count) || count > (UINT64_MAX >> *shift))
    return makeError(ErrorKind::Usage, "'" + text +
                                           "' is too large: the largest "
                                           "size is 2^64 - 1 bytes");
  if (count == 0)
    return makeError(ErrorKind::Usage,
                     "a size of 0 would keep no kernel: use a size such as "
                     "512M, or FMHAJIT_CACHE=off to keep kernels off the disk");
  return count << *shift;
}

/// Whether a scan of \p dir is due, claiming it when it is: the stamp is
/// rewritten first, so other processes skip this interval. Two processes
/// that look at the same moment both scan, which is harmless.
static bool claimScan(llvm::StringRef dir, std::chrono::seconds interval) {
  llvm::SmallString<256> stamp(dir);
  llvm::sys::path::append(stamp, kPruneStampName);
  fs::file_status status;
  std::error_code ec = fs::status(stamp, status);
  if (interval.count() > 0) {
    if (ec && ec != std::errc::no_such_file_or_directory)
      return false; // an unreadable stamp: leave the directory alone
    auto age =
        std::chrono::system_clock::now() - status.getLastModificationTime();
    if (!ec && age <= interval)
      return false;
  }
  // Stamped explicitly: reopening an empty file need not move its times.
  llvm::Expected<fs::file_t> fd =
      fs::openNativeFileForWrite(stamp, fs::CD_CreateAlways, fs::OF_None);
  if (!fd) {
    // Scan anyway; the next write tries the stamp again.
    llvm::consumeError(fd.takeError());
    return true;
  }
  fs::setLastAccessAndModificationTime(*fd, std::chrono::system_clock::now());
  fs::closeFile(*fd);
  return true;
}

/// Appends the artifact files of \p dir (regular files with an artifact's
/// name) to \p out. Files removed since the listing are skipped.
static llvm::Error listArtifacts(llvm::StringRef dir, std::vector<Entry> &out) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (classifyCacheFileName(llvm::sys::path::filename(it->path())) !=
        CacheFileKind::Artifact)
      continue;
    llvm::ErrorOr<fs::basic_file_status> status = it->status();
    if (!status || status->type() != fs::file_type::regular_file)
      continue;
    out.push_back(
        {status->getLastAccessedTime(), status->getSize(), it->path()});
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return makeError(ErrorKind::Io, "cannot list the cache directory '" + dir +
                                        "': " + ec.message());
  return llvm::Error::success();
}

llvm::Expected<PruneResult>
fmhajit::pruneCacheDirectory(llvm::StringRef dir, uint64_t maxBytes,
                             std::chrono::seconds interval) {
  PruneResult result;
  if (!claimScan(dir, interval))
    return result;
  result.scanned = true;
  std::vector<Entry> entries;
  if (llvm::Error err = listArtifacts(dir, entries))
    return std::move(err);
  std::sort(entries.begin(), entries.end());
  for (const Entry &e : entries)
    result.bytes += e.size;
  result.files = entries.size();
  ErrorList errors;
  for (const Entry &e : entries) {
    if (result.bytes <= maxBytes)
      break;
    // A file another process removed first counts as removed: it is gone.
    if (std::error_code ec = fs::remove(e.path, /*IgnoreNonExisting=*/true)) {
      errors.add(ErrorKind::Io,
                 "cannot remove '" + e.path + "': " + ec.message());
      continue;
    }
    result.bytes -= e.size;
    --result.files;
    ++result.removedFiles;
    result.removedBytes += e.size;
  }
  if (llvm::Error err = errors.take())
    return std::move(err);
  return result;
}

void fmhajit::markCacheFileUsed(fs::file_t fd,
                                llvm::sys::TimePoint<> modified) {
  fs::setLastAccessAndModificationTime(fd, std::chrono::system_clock::now(),
                                       modified);
}
