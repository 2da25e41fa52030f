//===- RoundTripTest.cpp - Every spec of `all` has one reversible name ----===//
//
// For each target, every spec of profile `all` must name itself with a C
// identifier that decodes back to exactly that spec, and print as text and
// JSON that parse back to it. Across targets, the names must be unique and
// `all` must use every value of every key.
//
//===----------------------------------------------------------------------===//
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Keys.h"
#include "specs/Profile.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/StringExtras.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <set>

using namespace fmhajit;

namespace {

std::vector<KernelSpec> allSpecs(std::optional<llvm::StringRef> target) {
  llvm::Expected<std::vector<KernelSpec>> specs = expandProfile("all", target);
  if (!specs) {
    ADD_FAILURE() << llvm::toString(specs.takeError());
    return {};
  }
  return *specs;
}

bool isCIdentifier(llvm::StringRef s) {
  return !s.empty() && !llvm::isDigit(s[0]) &&
         llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

std::vector<std::string> archNames() {
  std::vector<std::string> names;
  for (const ArchInfo &a : allArchs())
    names.push_back(a.name);
  return names;
}

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, NameDecodesToTheSameSpec) {
  std::vector<KernelSpec> specs = allSpecs(llvm::StringRef(GetParam()));
  ASSERT_FALSE(specs.empty()) << "profile all has no spec for " << GetParam();
  for (const KernelSpec &spec : specs) {
    std::string name = encodeName(spec);
    EXPECT_TRUE(isCIdentifier(name)) << name;
    EXPECT_LE(name.size(), 200u) << name;
    llvm::Expected<KernelSpec> decoded = decodeName(name);
    if (!decoded) {
      ADD_FAILURE() << name << ": " << llvm::toString(decoded.takeError());
      continue;
    }
    EXPECT_EQ(*decoded, spec) << name;
  }
}

TEST_P(RoundTrip, PrintedSpecParsesToTheSameSpec) {
  for (const KernelSpec &spec : allSpecs(llvm::StringRef(GetParam()))) {
    for (const std::string &text : {printSpec(spec), printSpecJson(spec)}) {
      llvm::Expected<KernelSpec> again = resolveText(text);
      if (!again) {
        ADD_FAILURE() << text << ": " << llvm::toString(again.takeError());
        continue;
      }
      EXPECT_EQ(*again, spec) << text;
    }
  }
}

// A resolved spec is a fixed point: resolving it again changes nothing.
TEST_P(RoundTrip, ResolvingIsIdempotent) {
  for (const KernelSpec &spec : allSpecs(llvm::StringRef(GetParam()))) {
    llvm::Expected<KernelSpec> again = validateSpec(spec);
    ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
    EXPECT_EQ(*again, spec);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, RoundTrip, ::testing::ValuesIn(archNames()),
                         [](const auto &info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(RoundTripAll, NamesAreUniqueAcrossTargets) {
  std::vector<KernelSpec> specs = allSpecs(std::nullopt);
  std::set<std::string> names;
  for (const KernelSpec &spec : specs)
    EXPECT_TRUE(names.insert(encodeName(spec)).second)
        << "two specs share the name " << encodeName(spec);
  EXPECT_GT(specs.size(), 1000u);
}

// `all` exists to exercise every key value: if a new value (or a new target)
// is added without a spec in the profile, this says which.
TEST(RoundTripAll, CoversEveryValueOfEveryKey) {
  std::set<std::string> seen;
  for (const KernelSpec &s : allSpecs(std::nullopt)) {
    std::string text = printSpec(s);
    for (llvm::StringRef field : llvm::split(text, ','))
      seen.insert(field.str());
    if (s.dv != s.d)
      seen.insert("dv!=d");
  }
  std::vector<std::string> wanted = {"dv!=d"};
  for (const auto &f : familySpellings())
    wanted.push_back(std::string("family=") + f.key);
  for (const auto &t : dtypeSpellings())
    wanted.push_back(std::string("dtype=") + t.key);
  for (const char *out : {"fp32", "fp16", "bf16"}) // fp8 outputs are invalid
    wanted.push_back(std::string("out=") + out);
  for (const auto &m : maskSpellings())
    wanted.push_back(std::string("mask=") + m.key);
  for (const auto &b : biasSpellings())
    wanted.push_back(std::string("bias=") + b.key);
  for (const char *flag :
       {"softcap", "lse", "dropout", "sink", "varlen", "pack_gqa"})
    wanted.push_back(std::string(flag) + "=1");
  for (const auto &p : pipelineSpellings())
    if (p.value != Pipeline::Auto) // resolved specs never say auto
      wanted.push_back(std::string("pipeline=") + p.key);
  for (const ArchInfo &a : allArchs()) {
    wanted.push_back("target=" + a.name);
    for (unsigned d : a.headDims)
      wanted.push_back("d=" + std::to_string(d));
  }
  for (const char *tile :
       {"bm=16", "bm=32", "bm=64", "bm=128", "bn=16", "bn=32", "bn=64",
        "bn=128", "warps=1", "warps=2", "warps=4", "warps=8", "stages=1",
        "stages=2", "stages=3"})
    wanted.push_back(tile);
  for (const std::string &w : wanted)
    EXPECT_TRUE(seen.count(w)) << "profile all never uses " << w;
}

} // namespace

// pack_gqa is part of the name: a packed kernel and its unpacked twin get
// different names, each decoding to itself, for every forward family on a
// target of each backend, and the flag goes last of the flags.
TEST(RoundTripPackGqa, NameCarriesTheFlag) {
  for (const char *family : {"fwd", "fwd_splitkv", "fwd_paged"})
    for (const char *target : {"host", "sm_90a", "gfx942"}) {
      std::string text = std::string("family=") + family +
                         ",mask=causal_br,lse=1,softcap=1,target=" + target;
      KernelSpec plain = resolvedSpec(text);
      KernelSpec packed = resolvedSpec(text + ",pack_gqa=1");
      ASSERT_TRUE(packed.pack_gqa);
      std::string name = encodeName(packed);
      EXPECT_NE(name, encodeName(plain));
      EXPECT_NE(name.find("_sc_lse_pgqa_m"), std::string::npos) << name;
      llvm::Expected<KernelSpec> decoded = decodeName(name);
      ASSERT_TRUE(bool(decoded)) << llvm::toString(decoded.takeError());
      EXPECT_EQ(*decoded, packed) << name;
    }
}

// sink is part of the name (token "sk", after lse) for every forward family
// on a target of each backend, and the resolved sink spec validates there:
// the forward families take it everywhere (docs/families.md).
TEST(RoundTripSink, NameCarriesTheFlagOnEveryBackend) {
  for (const char *family : {"fwd", "fwd_splitkv", "fwd_paged"})
    for (const char *target : {"host", "sm_90a", "gfx942", "gfx1100"}) {
      std::string text = std::string("family=") + family +
                         ",mask=causal,lse=1,target=" + target;
      KernelSpec plain = resolvedSpec(text);
      KernelSpec sink = resolvedSpec(text + ",sink=1");
      ASSERT_TRUE(sink.sink);
      std::string name = encodeName(sink);
      EXPECT_NE(name, encodeName(plain));
      EXPECT_NE(name.find("_lse_sk_m"), std::string::npos) << name;
      llvm::Expected<KernelSpec> decoded = decodeName(name);
      ASSERT_TRUE(bool(decoded)) << llvm::toString(decoded.takeError());
      EXPECT_EQ(*decoded, sink) << name;
    }
}
