//===- SpecKeysTest.cpp - Every key of SpecKeys.def reads, prints, names --===//
//
// The parser's key dispatch, both printers and the name's flag and tile
// fields are generated from SpecKeys.def. For each key this checks that the
// generated code reads, prints and names that key's field and no other: some
// spec of profile `all` sets the key away from its default, and that value
// survives setSpecKey of its printed text, parse(print) as text and JSON, and
// decode(encode). The docs, written by hand, must list the same keys.
//
//===----------------------------------------------------------------------===//
#include "specs/EncodedName.h"
#include "specs/Profile.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

/// One key of SpecKeys.def and a way to compare its field.
struct Key {
  const char *name;
  bool (*differs)(const KernelSpec &a, const KernelSpec &b);
};
const Key kKeys[] = {
#define SPEC_KEY(Name, Type, Default, Help)                                    \
  {#Name,                                                                      \
   [](const KernelSpec &a, const KernelSpec &b) { return a.Name != b.Name; }},
#include "specs/SpecKeys.def"
};

void PrintTo(const Key &key, std::ostream *os) { *os << key.name; }

const std::vector<KernelSpec> &allSpecs() {
  static const std::vector<KernelSpec> specs = [] {
    auto specs = expandProfile("all", std::nullopt);
    if (!specs)
      llvm::report_fatal_error(specs.takeError());
    return *specs;
  }();
  return specs;
}

/// The value \p text gives \p key ("d" in "family=fwd,d=64,..." is "64").
std::string valueIn(llvm::StringRef text, llvm::StringRef key) {
  for (llvm::StringRef pair : llvm::split(text, ','))
    if (pair.split('=').first == key)
      return pair.split('=').second.str();
  return "";
}

class SpecKey : public ::testing::TestWithParam<Key> {};

// A spec of `all` with this key away from its default, so that a key read
// into the wrong field, or not printed, shows.
// A spec with a variant: no profile has one (a variant is user code).
KernelSpec withVariant() {
  KernelSpec s;
  s.dtype = DType::F32;
  s.variant.hex = "0123456789abcdef";
  llvm::Expected<KernelSpec> resolved = validateSpec(s);
  if (!resolved)
    llvm::report_fatal_error(resolved.takeError());
  return *resolved;
}

TEST_P(SpecKey, ReadsPrintsAndNamesItsOwnField) {
  const Key &key = GetParam();
  std::vector<KernelSpec> specs = allSpecs();
  specs.push_back(withVariant());
  auto found = llvm::find_if(
      specs, [&](const KernelSpec &s) { return key.differs(s, KernelSpec()); });
  ASSERT_NE(found, specs.end()) << "no spec sets " << key.name;
  const KernelSpec &spec = *found;
  std::string text = printSpec(spec);

  KernelSpec one;
  llvm::Error err = setSpecKey(one, key.name, valueIn(text, key.name));
  ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
  EXPECT_FALSE(key.differs(one, spec)) << key.name << " in " << text;

  for (const std::string &printed : {text, printSpecJson(spec)}) {
    llvm::Expected<KernelSpec> again = resolveText(printed);
    ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
    EXPECT_FALSE(key.differs(*again, spec)) << printed;
  }
  llvm::Expected<KernelSpec> decoded = decodeName(encodeName(spec));
  ASSERT_TRUE(bool(decoded)) << llvm::toString(decoded.takeError());
  EXPECT_FALSE(key.differs(*decoded, spec)) << encodeName(spec);
}

// An empty value is wrong for every key; the message must blame that key,
// so the dispatch reached it (rather than reporting an unknown key).
TEST_P(SpecKey, AnEmptyValueIsThatKeysError) {
  const Key &key = GetParam();
  KernelSpec spec;
  llvm::Error err = setSpecKey(spec, key.name, "");
  ASSERT_TRUE(bool(err));
  std::vector<std::string> problems = specProblems(std::move(err), key.name);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(
      llvm::StringRef(problems[0]).starts_with(std::string(key.name) + "=: "))
      << problems[0];
}

INSTANTIATE_TEST_SUITE_P(Keys, SpecKey, ::testing::ValuesIn(kKeys),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

TEST(SpecKeys, PrintersWriteEveryKeyInOrder) {
  std::vector<std::string> keys;
  for (const Key &k : kKeys)
    keys.push_back(k.name);
  std::vector<std::string> text, json;
  // Every key, variant last; a spec without one prints no variant key.
  std::string printed = printSpec(withVariant());
  std::string plain = printSpec(KernelSpec());
  EXPECT_EQ(plain.find("variant="), std::string::npos) << plain;
  for (llvm::StringRef pair : llvm::split(printed, ','))
    text.push_back(pair.split('=').first.str());
  EXPECT_EQ(text, keys);
  // json::Object forgets the order, so read the keys off the printed lines.
  std::string printedJson = printSpecJson(withVariant());
  for (llvm::StringRef line : llvm::split(printedJson, '\n'))
    if (line.trim().starts_with("\""))
      json.push_back(line.trim().drop_front().split('"').first.str());
  EXPECT_EQ(json, keys);
}

std::string readDoc(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(FMHAJIT_SOURCE_DIR) +
                                            "/" + path.str());
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << path.str();
    return "";
  }
  return (*buffer)->getBuffer().str();
}

// The table under "## Keys" in docs/specs.md: one row per key, in order.
TEST(SpecKeys, SpecsDocListsEveryKeyInOrder) {
  std::string doc = readDoc("docs/specs.md");
  llvm::StringRef table =
      llvm::StringRef(doc).split("## Keys").second.split("\n## ").first;
  std::vector<std::string> documented, keys;
  for (llvm::StringRef line : llvm::split(table, '\n'))
    if (line.consume_front("| `"))
      documented.push_back(line.split('`').first.str());
  for (const Key &k : kKeys)
    keys.push_back(k.name);
  EXPECT_EQ(documented, keys);
}

// docs/names.md: the flags row gives each flag key and its token in name
// order, the tile rule each tile key after its letter.
TEST(SpecKeys, NamesDocGivesFlagTokensAndTileLetters) {
  std::string flagKeys, flagTokens, tile, tileKeys;
  auto append = [](std::string &list, const llvm::Twine &item,
                   const char *sep) {
    list += (list.empty() ? "" : sep) + item.str();
  };
#define SPEC_FLAG(Name, Token, Help)                                           \
  append(flagKeys, "`" #Name "`", ", ");                                       \
  append(flagTokens, llvm::Twine("`") + Token + "`", ", ");
#define SPEC_TILE(Name, Letter, Help)                                          \
  append(tile, "\"" + std::string(1, Letter) + "\" number", " ");              \
  append(tileKeys, #Name, ", ");
#include "specs/SpecKeys.def"
  std::string doc = readDoc("docs/names.md");
  EXPECT_NE(doc.find("| flags | " + flagKeys + " | " + flagTokens +
                     ", present when 1"),
            std::string::npos)
      << "docs/names.md should list the flags as " << flagKeys << " | "
      << flagTokens;
  EXPECT_NE(doc.find("tile     = " + tile + "   ; " + tileKeys),
            std::string::npos)
      << "docs/names.md should give the tile as " << tile << " ; " << tileKeys;
}

} // namespace
