//===- SpecParser.cpp - Reading and printing specs ------------------------===//
#include "specs/SpecParser.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;
using llvm::StringRef;

static const StringRef kKeys[] = {
    "family",  "dtype", "out",  "d",     "dv",       "mask",
    "bias",    "softcap", "lse", "dropout", "sink",  "varlen",
    "bm",      "bn",    "warps", "stages", "pipeline", "target"};

llvm::ArrayRef<StringRef> fmhajit::specKeys() { return kKeys; }

static llvm::Error badValue(StringRef key, StringRef value,
                            const llvm::Twine &allowed) {
  return makeError(ErrorKind::Spec, key + "=" + value + ": " + allowed);
}

template <typename E>
static llvm::Error setEnum(E &field, StringRef key, StringRef value) {
  if (auto v = parseKey<E>(value)) {
    field = *v;
    return llvm::Error::success();
  }
  return badValue(key, value, "unknown " + key + "; use one of " + allKeys<E>());
}

// Numbers are plain decimals below 2^16: enough for any head dim or tile,
// and small enough that no arithmetic on them can overflow.
static llvm::Error setNumber(unsigned &field, StringRef key, StringRef value) {
  unsigned n = 0;
  if (value.getAsInteger(10, n) || n > 65535 || value.starts_with("+"))
    return badValue(key, value, "expected a whole number from 0 to 65535");
  field = n;
  return llvm::Error::success();
}

static llvm::Error setFlag(bool &field, StringRef key, StringRef value) {
  if (value != "0" && value != "1")
    return badValue(key, value, "expected 0 or 1");
  field = value == "1";
  return llvm::Error::success();
}

llvm::Error fmhajit::setSpecKey(KernelSpec &s, StringRef key, StringRef value) {
  if (key == "family")
    return setEnum(s.family, key, value);
  if (key == "dtype")
    return setEnum(s.dtype, key, value);
  if (key == "out") {
    DType t{};
    llvm::Error err = setEnum(t, key, value);
    if (!err)
      s.out = t;
    return err;
  }
  if (key == "mask")
    return setEnum(s.mask, key, value);
  if (key == "bias")
    return setEnum(s.bias, key, value);
  if (key == "pipeline")
    return setEnum(s.pipeline, key, value);
  struct NumberKey { StringRef name; unsigned KernelSpec::*field; };
  static const NumberKey kNumbers[] = {
      {"d", &KernelSpec::d},   {"dv", &KernelSpec::dv},
      {"bm", &KernelSpec::bm}, {"bn", &KernelSpec::bn},
      {"warps", &KernelSpec::warps}, {"stages", &KernelSpec::stages}};
  for (const NumberKey &n : kNumbers)
    if (key == n.name)
      return setNumber(s.*n.field, key, value);
  struct FlagKey { StringRef name; bool KernelSpec::*field; };
  static const FlagKey kFlags[] = {
      {"softcap", &KernelSpec::softcap}, {"lse", &KernelSpec::lse},
      {"dropout", &KernelSpec::dropout}, {"sink", &KernelSpec::sink},
      {"varlen", &KernelSpec::varlen}};
  for (const FlagKey &f : kFlags)
    if (key == f.name)
      return setFlag(s.*f.field, key, value);
  if (key == "target") {
    if (value.empty())
      return badValue(key, value, "a target is required");
    s.target = value.str(); // checked against the arch tables by validateSpec
    return llvm::Error::success();
  }
  return makeError(ErrorKind::Spec,
                   "unknown key '" + key + "'; keys are " +
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

static std::optional<std::vector<std::string>> topLevelJsonKeys(StringRef text) {
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
    return makeError(ErrorKind::Spec,
                     "spec is not valid JSON: " + llvm::toString(value.takeError()));
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
    return makeError(ErrorKind::Spec, "the spec is empty; write key=value "
                                      "pairs such as family=fwd,dtype=bf16,d=128");
  // '[' too: a JSON array is a JSON mistake, and its message should say so.
  if (trimmed.starts_with("{") || trimmed.starts_with("["))
    return parseJson(trimmed);
  return parseText(trimmed);
}

// One list of (key, printed value) drives both printers.
static std::vector<std::pair<StringRef, std::string>> specFields(const KernelSpec &s) {
  auto flag = [](bool b) { return std::string(b ? "1" : "0"); };
  return {{"family", keyOf(s.family).str()},
          {"dtype", keyOf(s.dtype).str()},
          {"out", keyOf(s.outType()).str()},
          {"d", std::to_string(s.d)},
          {"dv", std::to_string(s.headDimV())},
          {"mask", keyOf(s.mask).str()},
          {"bias", keyOf(s.bias).str()},
          {"softcap", flag(s.softcap)},
          {"lse", flag(s.lse)},
          {"dropout", flag(s.dropout)},
          {"sink", flag(s.sink)},
          {"varlen", flag(s.varlen)},
          {"bm", std::to_string(s.bm)},
          {"bn", std::to_string(s.bn)},
          {"warps", std::to_string(s.warps)},
          {"stages", std::to_string(s.stages)},
          {"pipeline", keyOf(s.pipeline).str()},
          {"target", s.target}};
}

std::string fmhajit::printSpec(const KernelSpec &spec) {
  std::string out;
  for (const auto &[key, value] : specFields(spec))
    out += (out.empty() ? "" : ",") + key.str() + "=" + value;
  return out;
}

// Head dims, tiles and 0/1 flags print as JSON numbers; the rest as strings.
static bool isNumeric(StringRef value) {
  return !value.empty() && llvm::all_of(value, llvm::isDigit);
}

std::string fmhajit::printSpecJson(const KernelSpec &spec) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, 2);
  json.object([&] {
    for (const auto &[key, value] : specFields(spec)) {
      if (isNumeric(value))
        json.attribute(key, std::stoi(value));
      else
        json.attribute(key, value);
    }
  });
  return text;
}
