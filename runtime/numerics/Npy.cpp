//===- Npy.cpp - NumPy .npy files of float32 ------------------------------===//
#include "runtime/numerics/Npy.h"
#include "runtime/numerics/AttentionProblem.h"
#include "specs/Errors.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/EndianStream.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cassert>

using namespace fmhajit;
using llvm::StringRef;
using llvm::Twine;

static constexpr StringRef kMagic("\x93NUMPY", 6);
static constexpr size_t kAlignment = 64;

/// Python's spelling of a shape tuple: (), (5,) or (2, 3).
static std::string shapeTuple(llvm::ArrayRef<int64_t> shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::string fmhajit::npyHeader(llvm::ArrayRef<int64_t> shape) {
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + shapeTuple(shape) +
      ", }";
  size_t unpadded = kMagic.size() + 4 + dict.size() + 1; // +1: the '\n'
  dict.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  dict += '\n';
  assert(dict.size() <= 0xffff && "shape too long for a v1.0 header");
  std::string out = kMagic.str();
  out += '\x01'; // version 1.0
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict;
}

llvm::Error fmhajit::writeFileAtomically(
    StringRef path, llvm::function_ref<void(llvm::raw_ostream &)> write) {
  llvm::Error err = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    write(os);
    return llvm::Error::success();
  });
  if (!err)
    return llvm::Error::success();
  return makeError(ErrorKind::Io, "cannot write '" + path +
                                      "': " + llvm::toString(std::move(err)));
}

llvm::Error fmhajit::writeNpy(StringRef path, llvm::ArrayRef<float> data,
                              llvm::ArrayRef<int64_t> shape) {
  assert(static_cast<int64_t>(data.size()) == numElements(shape) &&
         "data does not fill the shape");
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << npyHeader(shape);
    for (float f : data)
      llvm::support::endian::write(os, llvm::bit_cast<uint32_t>(f),
                                   llvm::endianness::little);
  });
}

/// The text after `'key':` in a header dictionary, or "" when absent.
static StringRef valueOf(StringRef dict, StringRef key) {
  size_t at = dict.find(("'" + key + "':").str());
  if (at == StringRef::npos)
    return "";
  return dict.drop_front(at + key.size() + 3).ltrim();
}

/// Parses "(2, 3)", "(5,)" or "()".
static bool parseShape(StringRef text, std::vector<int64_t> &shape) {
  if (!text.consume_front("("))
    return false;
  text = text.take_until([](char c) { return c == ')'; });
  while (!(text = text.ltrim()).empty()) {
    StringRef item;
    std::tie(item, text) = text.split(',');
    int64_t dim;
    if (item.trim().getAsInteger(10, dim) || dim < 0)
      return false;
    shape.push_back(dim);
  }
  return true;
}

/// Splits a file into its header dictionary and data; "" when malformed.
static StringRef headerOf(StringRef file, StringRef &data) {
  if (file.size() < 10 || !file.starts_with(kMagic))
    return "";
  unsigned major = static_cast<uint8_t>(file[6]);
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (file.size() < 8 + lengthBytes)
    return "";
  size_t length = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    length |= static_cast<size_t>(static_cast<uint8_t>(file[8 + i])) << (8 * i);
  size_t start = 8 + lengthBytes;
  if (file.size() < start + length)
    return "";
  data = file.drop_front(start + length);
  return file.substr(start, length);
}

static llvm::Error malformed(StringRef path, const Twine &why) {
  return makeError(ErrorKind::Io,
                   "'" + path + "' is not a float32 .npy file: " + why);
}

llvm::Expected<NpyArray> fmhajit::readNpy(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return makeError(ErrorKind::Io, "cannot read '" + path +
                                        "': " + buffer.getError().message());
  StringRef data;
  StringRef dict = headerOf((*buffer)->getBuffer(), data);
  if (dict.empty())
    return malformed(path, "bad magic or header");
  if (!valueOf(dict, "descr").starts_with("'<f4'"))
    return malformed(path, "dtype is not '<f4'");
  if (!valueOf(dict, "fortran_order").starts_with("False"))
    return malformed(path, "not in C order");
  NpyArray array;
  if (!parseShape(valueOf(dict, "shape"), array.shape))
    return malformed(path, "bad shape");
  size_t count = numElements(array.shape);
  if (data.size() != 4 * count)
    return malformed(path, "expected " + Twine(4 * count) +
                               " data bytes, found " + Twine(data.size()));
  array.data.resize(count);
  for (size_t i = 0; i < count; ++i)
    array.data[i] = llvm::bit_cast<float>(
        llvm::support::endian::read32le(data.data() + 4 * i));
  return array;
}
