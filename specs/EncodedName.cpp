//===- EncodedName.cpp - The canonical, reversible name of a spec ---------===//
#include "specs/EncodedName.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/Validate.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace fmhajit;
using llvm::StringRef;

static constexpr StringRef kPrefix = "fmha";
/// The variant field: this token, then the variant's hash.
static constexpr StringRef kVariantToken = "var";

namespace {
/// The 0/1 flags in name order, with their tokens.
struct FlagToken {
  bool KernelSpec::*field;
  StringRef token;
};
const FlagToken kFlagTokens[] = {
#define SPEC_FLAG(Name, Token, Help) {&KernelSpec::Name, Token},
#include "specs/SpecKeys.def"
};

/// The tile keys in the order of the name's tile field, with their letters.
struct TileLetter {
  char letter;
  unsigned KernelSpec::*field;
  const char *key;
};
const TileLetter kTileLetters[] = {
#define SPEC_TILE(Name, Letter, Help) {Letter, &KernelSpec::Name, #Name},
#include "specs/SpecKeys.def"
};

DType defaultOut(DType in) { return isFp8(in) ? DType::BF16 : in; }
} // namespace

std::string fmhajit::targetToken(StringRef target) {
  std::string out;
  for (char c : target)
    if (c != '_' && c != '-')
      out += c;
  return out;
}

std::string fmhajit::encodeName(const KernelSpec &s) {
  std::string n =
      (kPrefix + "_" + tokenOf(s.family) + "_" + tokenOf(s.dtype)).str();
  if (s.outType() != defaultOut(s.dtype))
    n += ("o" + tokenOf(s.outType())).str();
  n += "_d" + std::to_string(s.d);
  if (s.headDimV() != s.d)
    n += "v" + std::to_string(s.headDimV());
  if (s.mask != Mask::None)
    n += ("_" + tokenOf(s.mask)).str();
  if (s.bias != Bias::None)
    n += ("_" + tokenOf(s.bias)).str();
  for (const FlagToken &f : kFlagTokens)
    if (s.*f.field)
      n += ("_" + f.token).str();
  if (!s.variant.empty())
    n += ("_" + kVariantToken + s.variant.hex).str();
  n += "_";
  for (const TileLetter &t : kTileLetters)
    n += t.letter + std::to_string(s.*t.field);
  n += ("_" + tokenOf(s.pipeline) + "_" + targetToken(s.target)).str();
  return n;
}

namespace {
/// Reads a name field by field, front to back.
class NameReader {
public:
  explicit NameReader(StringRef name) : name(name) { name.split(fields, '_'); }
  llvm::Expected<KernelSpec> read();

private:
  llvm::Error bad(const llvm::Twine &key, const llvm::Twine &why) const {
    return makeError(ErrorKind::Spec, "name " + name + ": " + key + ": " + why);
  }
  StringRef next() { return pos < fields.size() ? fields[pos++] : StringRef(); }
  StringRef peek() const {
    return pos < fields.size() ? fields[pos] : StringRef();
  }
  llvm::Error readTypes(KernelSpec &s, StringRef field);
  llvm::Error readHeadDims(KernelSpec &s, StringRef field);
  void readOptional(KernelSpec &s);
  llvm::Error readTile(KernelSpec &s, StringRef field);
  llvm::Error readTarget(KernelSpec &s, StringRef field);

  StringRef name;
  llvm::SmallVector<StringRef, 16> fields;
  size_t pos = 0;
};
} // namespace

llvm::Error NameReader::readTypes(KernelSpec &s, StringRef field) {
  auto [in, out] = field.split('o');
  // "bf16obf16": the first 'o' splits; tokens themselves contain no 'o'.
  auto dtype = parseToken<DType>(in);
  if (!dtype)
    return bad("dtype", "unknown dtype token '" + in + "'");
  s.dtype = *dtype;
  s.out = defaultOut(*dtype);
  if (field.contains('o')) {
    auto outType = parseToken<DType>(out);
    if (!outType)
      return bad("out", "unknown output dtype token '" + out + "'");
    s.out = *outType;
  }
  return llvm::Error::success();
}

llvm::Error NameReader::readHeadDims(KernelSpec &s, StringRef field) {
  if (!field.consume_front("d"))
    return bad("d", "expected d<head dim>, found '" + field + "'");
  auto [d, dv] = field.split('v');
  if (d.getAsInteger(10, s.d) || s.d > 65535)
    return bad("d", "'" + d + "' is not a head dim");
  s.dv = s.d;
  if (field.contains('v') && (dv.getAsInteger(10, s.dv) || s.dv > 65535))
    return bad("dv", "'" + dv + "' is not a head dim");
  return llvm::Error::success();
}

// Mask, bias and flags are each present or not, in a fixed order; an unknown
// field ends this part and is diagnosed as a tile field.
void NameReader::readOptional(KernelSpec &s) {
  if (auto m = parseToken<Mask>(peek()); m && *m != Mask::None) {
    s.mask = *m;
    ++pos;
  }
  if (auto b = parseToken<Bias>(peek()); b && *b != Bias::None) {
    s.bias = *b;
    ++pos;
  }
  for (const FlagToken &f : kFlagTokens)
    if (peek() == f.token) {
      s.*f.field = true;
      ++pos;
    }
  StringRef hash = peek();
  if (hash.consume_front(kVariantToken) && isVariantHash(hash.str())) {
    s.variant.hex = hash.str();
    ++pos;
  }
}

// "m<bm>n<bn>w<warps>s<stages>", for messages.
static std::string tilePattern() {
  std::string out;
  for (const TileLetter &t : kTileLetters)
    out += t.letter + ("<" + StringRef(t.key) + ">").str();
  return out;
}

llvm::Error NameReader::readTile(KernelSpec &s, StringRef field) {
  StringRef rest = field;
  for (const TileLetter &p : kTileLetters) {
    if (!rest.consume_front(StringRef(&p.letter, 1)))
      return bad(p.key, "expected a tile " + llvm::Twine(tilePattern()) +
                            ", found '" + field + "'");
    size_t digits = std::min(rest.find_first_not_of("0123456789"), rest.size());
    if (digits == 0 || digits > 5 ||
        rest.substr(0, digits).getAsInteger(10, s.*p.field))
      return bad(p.key, "expected a number in tile '" + field + "'");
    rest = rest.drop_front(digits);
  }
  if (!rest.empty())
    return bad(kTileLetters[0].key,
               "trailing '" + rest + "' after tile '" + field + "'");
  return llvm::Error::success();
}

llvm::Error NameReader::readTarget(KernelSpec &s, StringRef field) {
  for (const ArchInfo &a : allArchs())
    if (targetToken(a.name) == field) {
      s.target = a.name;
      return llvm::Error::success();
    }
  return bad("target", "unknown target token '" + field + "'");
}

llvm::Expected<KernelSpec> NameReader::read() {
  KernelSpec s;
  if (next() != kPrefix)
    return bad("family", "a name starts with 'fmha_'");
  StringRef family = next();
  auto f = parseToken<Family>(family);
  if (!f)
    return bad("family", "unknown family token '" + family + "'");
  s.family = *f;
  if (llvm::Error err = readTypes(s, next()))
    return std::move(err);
  if (llvm::Error err = readHeadDims(s, next()))
    return std::move(err);
  readOptional(s);
  if (llvm::Error err = readTile(s, next()))
    return std::move(err);
  StringRef pipeline = next();
  auto p = parseToken<Pipeline>(pipeline);
  if (!p || *p == Pipeline::Auto)
    return bad("pipeline", "unknown pipeline token '" + pipeline + "'");
  s.pipeline = *p;
  if (llvm::Error err = readTarget(s, next()))
    return std::move(err);
  if (pos != fields.size())
    return bad("target", "unexpected fields after the target");
  return s;
}

llvm::Expected<KernelSpec> fmhajit::decodeName(StringRef name) {
  if (name.empty() || name.size() > 200 ||
      !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return makeError(ErrorKind::Spec,
                     "a name is a C identifier of at most 200 characters");
  llvm::Expected<KernelSpec> read = NameReader(name).read();
  if (!read)
    return read.takeError();
  llvm::Expected<KernelSpec> resolved = validateSpec(*read);
  if (!resolved)
    return resolved.takeError();
  if (*resolved != *read || encodeName(*resolved) != name)
    return makeError(ErrorKind::Spec,
                     "name " + name +
                         ": not canonical; the canonical name is " +
                         encodeName(*resolved));
  return *resolved;
}
