//===- CacheFile.cpp - The on-disk format of one cached artifact ----------===//
#include "compiler/CacheFile.h"
#include "specs/Errors.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace fmhajit;
namespace endian = llvm::support::endian;

namespace {
constexpr llvm::StringLiteral kMagic = "FMHAJITC";
constexpr size_t kHeaderSize = 32;
constexpr size_t kHashDigits = 16;
constexpr llvm::StringLiteral kArtifactSuffix = ".bin";
constexpr llvm::StringLiteral kTempInfix = ".tmp-";

/// The fields of a header, as read from a file.
struct Header {
  uint32_t version;
  uint32_t keySize;
  uint64_t payloadSize;
  uint64_t payloadHash;
};

Header readHeader(llvm::StringRef file) {
  const char *p = file.data() + kMagic.size();
  Header h;
  h.version = endian::read32le(p);
  h.keySize = endian::read32le(p + 4);
  h.payloadSize = endian::read64le(p + 8);
  h.payloadHash = endian::read64le(p + 16);
  return h;
}

bool isIdentifier(llvm::StringRef s) {
  if (s.empty() || llvm::isDigit(s.front()))
    return false;
  return llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

bool isLowerHex(llvm::StringRef s) {
  return llvm::all_of(
      s, [](char c) { return llvm::isDigit(c) || (c >= 'a' && c <= 'f'); });
}

llvm::Error corrupt(const llvm::Twine &why) {
  return makeError(ErrorKind::Io, why);
}
} // namespace

std::string fmhajit::cacheKeyText(llvm::StringRef name,
                                  llvm::StringRef fingerprint) {
  // Names are C identifiers, so the first '\n' always ends the name.
  return (name + "\n" + fingerprint).str();
}

std::string fmhajit::cacheFileName(llvm::StringRef name,
                                   llvm::StringRef fingerprint) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << name << '-'
     << llvm::format_hex_no_prefix(llvm::xxh3_64bits(fingerprint), kHashDigits)
     << kArtifactSuffix;
  return out;
}

CacheFileKind fmhajit::classifyCacheFileName(llvm::StringRef fileName) {
  if (fileName == kPruneStampName)
    return CacheFileKind::PruneStamp;
  // Split "<name>-<hash>.bin<rest>" from the right: names never hold '-'.
  size_t bin = fileName.rfind(kArtifactSuffix);
  if (bin == llvm::StringRef::npos)
    return CacheFileKind::Foreign;
  llvm::StringRef stem = fileName.take_front(bin);
  llvm::StringRef rest = fileName.drop_front(bin + kArtifactSuffix.size());
  auto [name, hash] = stem.rsplit('-');
  if (hash.size() != kHashDigits || !isLowerHex(hash) || !isIdentifier(name))
    return CacheFileKind::Foreign;
  if (rest.empty())
    return CacheFileKind::Artifact;
  if (rest.consume_front(kTempInfix) && !rest.empty())
    return CacheFileKind::Temp;
  return CacheFileKind::Foreign;
}

std::string fmhajit::encodeCacheHeader(llvm::StringRef keyText,
                                       llvm::StringRef payload) {
  std::string out(kHeaderSize, '\0');
  char *p = out.data();
  memcpy(p, kMagic.data(), kMagic.size());
  endian::write32le(p + 8, kCacheFormatVersion);
  endian::write32le(p + 12, static_cast<uint32_t>(keyText.size()));
  endian::write64le(p + 16, payload.size());
  endian::write64le(p + 24, llvm::xxh3_64bits(payload));
  out += keyText;
  return out;
}

llvm::Expected<llvm::StringRef>
fmhajit::decodeCacheFile(llvm::StringRef file, llvm::StringRef keyText) {
  if (file.size() < kHeaderSize)
    return corrupt("truncated: " + llvm::Twine(file.size()) +
                   " bytes is shorter than the header");
  if (!file.starts_with(kMagic))
    return corrupt("bad magic: not an fmhajit cache file");
  Header h = readHeader(file);
  if (h.version != kCacheFormatVersion)
    return corrupt("format version " + llvm::Twine(h.version) + ", expected " +
                   llvm::Twine(kCacheFormatVersion));
  // Compare sizes in 64 bits before slicing so huge fields cannot wrap.
  uint64_t expected = kHeaderSize + uint64_t(h.keySize) + h.payloadSize;
  if (h.payloadSize > file.size() || expected != file.size())
    return corrupt("size mismatch: the header promises " +
                   llvm::Twine(expected) + " bytes, the file has " +
                   llvm::Twine(file.size()));
  llvm::StringRef key = file.substr(kHeaderSize, h.keySize);
  llvm::StringRef payload = file.drop_front(kHeaderSize + h.keySize);
  if (llvm::xxh3_64bits(payload) != h.payloadHash)
    return corrupt("hash mismatch: the payload is damaged");
  if (key != keyText)
    return corrupt("key mismatch: the file holds another kernel or "
                   "fingerprint (a file-name hash collision or a damaged key)");
  return payload;
}

llvm::Error fmhajit::writeCacheFile(llvm::StringRef path,
                                    llvm::StringRef header,
                                    llvm::StringRef payload) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError(ErrorKind::Io, "cannot create cache directory '" + dir +
                                        "': " + ec.message());
  int fd = -1;
  llvm::SmallString<256> tempPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          path + kTempInfix + "%%%%%%%%", fd, tempPath))
    return makeError(ErrorKind::Io,
                     "cannot create a file in '" + dir + "': " + ec.message());
  // From here on, every failure must take the temporary file with it.
  bool renamed = false;
  llvm::scope_exit removeTemp([&] {
    if (!renamed)
      llvm::sys::fs::remove(tempPath);
  });
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << header << payload;
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      return makeError(ErrorKind::Io,
                       "cannot write '" + tempPath + "': " + ec.message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tempPath, path))
    return makeError(ErrorKind::Io, "cannot rename '" + tempPath + "' to '" +
                                        path + "': " + ec.message());
  renamed = true;
  return llvm::Error::success();
}
