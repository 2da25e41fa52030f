//===- SpecParser.cpp - Reading and printing specs ------------------------===//
#include "specs/SpecParser.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <type_traits>

using namespace fmhajit;
using llvm::StringRef;

static const StringRef kKeys[] = {
#define SPEC_KEY(Name, Type, Default, Help) #Name,
#include "specs/SpecKeys.def"
};

llvm::ArrayRef<StringRef> fmhajit::specKeys() { return kKeys; }

static llvm::Error badValue(StringRef key, StringRef value,
                            const llvm::Twine &allowed) {
  return makeError(ErrorKind::Spec, key + "=" + value + ": " + allowed);
}

// One reader per field type; SPEC_KEY's Type picks the one a key uses.
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
static llvm::Error readValue(E &field, StringRef key, StringRef value) {
  if (auto v = parseKey<E>(value)) {
    field = *v;
    return llvm::Error::success();
  }
  return badValue(key, value,
                  "unknown " + key + "; use one of " + allKeys<E>());
}

static llvm::Error readValue(std::optional<DType> &field, StringRef key,
                             StringRef value) {
  DType t{};
  llvm::Error err = readValue(t, key, value);
  if (!err)
    field = t;
  return err;
}

// Numbers are plain decimals below 2^16: enough for any head dim or tile,
// and small enough that no arithmetic on them can overflow.
static llvm::Error readValue(unsigned &field, StringRef key, StringRef value) {
  unsigned n = 0;
  if (value.getAsInteger(10, n) || n > 65535 || value.starts_with("+"))
    return badValue(key, value, "expected a whole number from 0 to 65535");
  field = n;
  return llvm::Error::success();
}

static llvm::Error readValue(bool &field, StringRef key, StringRef value) {
  if (value != "0" && value != "1")
    return badValue(key, value, "expected 0 or 1");
  field = value == "1";
  return llvm::Error::success();
}

// The one string key is the target, checked against the arch tables by
// validateSpec; here it need only be present.
static llvm::Error readValue(std::string &field, StringRef key,
                             StringRef value) {
  if (value.empty())
    return badValue(key, value, "a target is required");
  field = value.str();
  return llvm::Error::success();
}

// The hash only: the source it names reaches the compiler another way
// (compiler/variants/VariantRegistry.h).
static llvm::Error readValue(VariantHash &field, StringRef key,
                             StringRef value) {
  if (!isVariantHash(value.str()))
    return badValue(key, value,
                    "expected the variant's hash, " +
                        llvm::Twine(kVariantHashDigits) +
                        " hex digits 0-9a-f (fmhajit prints it for --variant "
                        "FILE)");
  field.hex = value.str();
  return llvm::Error::success();
}

llvm::Error fmhajit::setSpecKey(KernelSpec &s, StringRef key, StringRef value) {
#define SPEC_KEY(Name, Type, Default, Help)                                    \
  if (key == #Name)                                                            \
    return readValue(s.Name, key, value);
#include "specs/SpecKeys.def"
  return makeError(ErrorKind::Spec, "unknown key '" + key + "'; keys are " +
                                        llvm::join(specKeys(), ", "));
}

// Applies one key once; a repeated key is an error, not a silent override.
static void applyKey(KernelSpec &spec, llvm::StringSet<> &seen, StringRef key,
                     StringRef value, ErrorList &errors) {
  if (!seen.insert(key).second) {
    errors.add(ErrorKind::Spec, "key '" + key + "' is given twice");
    return;
  }
  errors.add(setSpecKey(spec, key, value));
}

static llvm::Expected<KernelSpec> parseText(StringRef text) {
  KernelSpec spec;
  ErrorList errors;
  llvm::StringSet<> seen;
  llvm::SmallVector<StringRef, 16> pairs;
  text.split(pairs, ',');
  for (StringRef pair : pairs) {
    pair = pair.trim();
    auto [key, value] = pair.split('=');
    if (pair.empty() || !pair.contains('='))
      errors.add(ErrorKind::Spec, "'" + pair + "' is not a key=value pair");
    else
      applyKey(spec, seen, key.trim(), value.trim(), errors);
  }
  if (!errors.empty())
    return errors.take();
  return spec;
}

// JSON values become the same strings the text form uses.
static std::optional<std::string> jsonScalar(const llvm::json::Value &v) {
  if (auto s = v.getAsString())
    return s->str();
  if (auto b = v.getAsBoolean())
    return std::string(*b ? "1" : "0");
  if (auto i = v.getAsInteger())
    return std::to_string(*i);
  return std::nullopt;
}

// llvm::json::parse recurses once per nesting level (deep input overflows the
// stack) and keeps only the last of repeated keys. A spec is one flat object,
// so this scan rejects deep nesting before parsing and returns the top-level
// keys in the order written, repeats included, for applyKey to diagnose.
static constexpr unsigned kMaxJsonDepth = 64;

static std::optional<std::vector<std::string>>
topLevelJsonKeys(StringRef text) {
  std::vector<std::string> keys;
  unsigned depth = 0;
  bool expectKey = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      StringRef quoted = text.slice(i, end + 1);
      if (depth == 1 && expectKey) {
        llvm::Expected<llvm::json::Value> key = llvm::json::parse(quoted);
        keys.push_back(key && key->getAsString() ? key->getAsString()->str()
                                                 : quoted.str());
        if (!key)
          llvm::consumeError(key.takeError());
      }
      i = end;
      expectKey = false;
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth)
        return std::nullopt;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
    if (!llvm::isSpace(c))
      expectKey = depth == 1 && (c == '{' || c == ',');
  }
  return keys;
}

static llvm::Expected<KernelSpec> parseJson(StringRef text) {
  std::optional<std::vector<std::string>> keys = topLevelJsonKeys(text);
  if (!keys)
    return makeError(ErrorKind::Spec, "a JSON spec is one object of key: value "
                                      "pairs; this one nests too deeply");
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return makeError(ErrorKind::Spec, "spec is not valid JSON: " +
                                          llvm::toString(value.takeError()));
  const llvm::json::Object *object = value->getAsObject();
  if (!object)
    return makeError(ErrorKind::Spec, "a JSON spec must be an object");
  KernelSpec spec;
  ErrorList errors;
  llvm::StringSet<> seen;
  for (const std::string &key : *keys) {
    const llvm::json::Value *v = object->get(key);
    assert(v && "the key scan disagrees with json::parse");
    if (!v)
      continue;
    if (auto s = jsonScalar(*v))
      applyKey(spec, seen, key, *s, errors);
    else
      errors.add(ErrorKind::Spec,
                 "key '" + key + "' must be a string, number or boolean");
  }
  if (!errors.empty())
    return errors.take();
  return spec;
}

llvm::Expected<KernelSpec> fmhajit::parseSpec(StringRef text) {
  StringRef trimmed = text.trim();
  if (trimmed.empty())
    return makeError(ErrorKind::Spec,
                     "the spec is empty; write key=value "
                     "pairs such as family=fwd,dtype=bf16,d=128");
  // '[' too: a JSON array is a JSON mistake, and its message should say so.
  if (trimmed.starts_with("{") || trimmed.starts_with("["))
    return parseJson(trimmed);
  return parseText(trimmed);
}

namespace {
/// One key as printed: its text, and whether JSON writes it as a number.
struct PrintedKey {
  StringRef key;
  std::string text;
  std::optional<unsigned> number;
};
} // namespace

// One printer per field type, as for reading: head dims, tiles and 0/1 flags
// are numbers, the rest strings.
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
static PrintedKey printValue(StringRef key, E v) {
  return {key, keyOf(v).str(), std::nullopt};
}
static PrintedKey printValue(StringRef key, const std::optional<DType> &v) {
  assert(v && "printed specs have their output dtype resolved");
  return printValue(key, *v);
}
static PrintedKey printValue(StringRef key, unsigned v) {
  return {key, std::to_string(v), v};
}
static PrintedKey printValue(StringRef key, bool v) {
  return {key, v ? "1" : "0", unsigned(v)};
}
static PrintedKey printValue(StringRef key, const std::string &v) {
  return {key, v, std::nullopt};
}
static PrintedKey printValue(StringRef key, const VariantHash &v) {
  return {key, v.hex, std::nullopt};
}

// out and dv print the values they resolve to, so that a printed spec says
// what it means even before validateSpec; tiles stay 0 when unset. A spec
// without a variant prints no variant key, as it did before variants.
static std::vector<PrintedKey> printedKeys(const KernelSpec &spec) {
  KernelSpec s = spec;
  s.out = spec.outType();
  s.dv = spec.headDimV();
  std::vector<PrintedKey> keys = {
#define SPEC_KEY(Name, Type, Default, Help) printValue(#Name, s.Name),
#include "specs/SpecKeys.def"
  };
  if (s.variant.empty())
    keys.pop_back();
  return keys;
}

std::string fmhajit::printSpec(const KernelSpec &spec) {
  std::string out;
  for (const PrintedKey &p : printedKeys(spec))
    out += (out.empty() ? "" : ",") + p.key.str() + "=" + p.text;
  return out;
}

std::string fmhajit::printSpecJson(const KernelSpec &spec) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, 2);
  json.object([&] {
    for (const PrintedKey &p : printedKeys(spec)) {
      if (p.number)
        json.attribute(p.key, *p.number);
      else
        json.attribute(p.key, p.text);
    }
  });
  return text;
}
