//===- RobustnessTest.cpp - No input crashes the spec parser or decoder ---===//
//
// 200,000 seeded inputs, each given to both parseSpec+validateSpec and
// decodeName: mutated valid specs (text and JSON), mutated valid names, and
// random bytes. Each input must be accepted, and then name a spec that round
// trips, or rejected with spec errors only. A failure stops its test at the
// first bad input and prints it.
//
//===----------------------------------------------------------------------===//
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Keys.h"
#include "specs/Profile.h"
#include "specs/SpecParser.h"
#include "tests/unit/Mutator.h"
#include "tests/unit/SpecTesting.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

struct Corpus {
  std::vector<std::string> specs, names, words;
};

// Seeds are the profile `all` on every target, in both spellings; words are
// the vocabulary of specs and names, so insertions make near-misses.
const Corpus &corpus() {
  static const Corpus c = [] {
    Corpus c;
    llvm::Expected<std::vector<KernelSpec>> all =
        expandProfile("all", std::nullopt);
    if (!all)
      llvm::report_fatal_error(all.takeError());
    for (const KernelSpec &s : *all) {
      c.specs.push_back(printSpec(s));
      c.specs.push_back(printSpecJson(s));
      c.names.push_back(encodeName(s));
    }
    c.words = {"=",       ",",     "{",          "}",  "[",    "]",    "\"",
               ":",       "_",     " ",          "0",  "1",    "64",   "128",
               "65535",   "65536", "4294967296", "-1", "null", "true", "fmha_",
               "\\u0064", "o",     "v",          "m",  "n",    "w",    "s"};
    for (llvm::StringRef key : specKeys())
      c.words.push_back(key.str());
    auto addSpellings = [&](auto spellings) {
      for (const auto &s : spellings) {
        c.words.push_back(s.key);
        c.words.push_back(s.token);
      }
    };
    addSpellings(familySpellings());
    addSpellings(dtypeSpellings());
    addSpellings(maskSpellings());
    addSpellings(biasSpellings());
    addSpellings(pipelineSpellings());
    for (const ArchInfo &a : allArchs()) {
      c.words.push_back(a.name);
      c.words.push_back(targetToken(a.name));
    }
    return c;
  }();
  return c;
}

struct Tally {
  unsigned specsAccepted = 0, namesAccepted = 0, inputs = 0;
};

// Checks one input both ways. Short of crashing, the library can still fail
// here: by accepting something that does not round trip, or by rejecting
// with something other than spec errors.
void checkInput(llvm::StringRef input, Tally &tally) {
  ++tally.inputs;
  llvm::Expected<KernelSpec> spec = resolveText(input);
  if (spec) {
    ++tally.specsAccepted;
    std::string name = encodeName(*spec);
    llvm::Expected<KernelSpec> back = decodeName(name);
    if (!back)
      ADD_FAILURE() << escapeBytes(input) << " resolved, but its name " << name
                    << " does not decode: " << llvm::toString(back.takeError());
    else
      EXPECT_EQ(*back, *spec) << escapeBytes(input);
  } else {
    specProblems(spec.takeError(), input);
  }
  llvm::Expected<KernelSpec> decoded = decodeName(input);
  if (decoded) {
    ++tally.namesAccepted;
    EXPECT_EQ(encodeName(*decoded), input.str())
        << "decoded a non-canonical name";
  } else {
    specProblems(decoded.takeError(), input);
  }
}

class Robustness : public ::testing::Test {
protected:
  void feed(uint64_t seed, const std::vector<std::string> &seeds,
            unsigned count, Tally &tally) {
    Mutator m(seed, seeds, corpus().words);
    for (unsigned i = 0; i < count && !HasFailure(); ++i)
      checkInput(m.mutated(), tally);
  }
};

TEST_F(Robustness, MutatedSpecs) {
  Tally tally;
  feed(1, corpus().specs, 100000, tally);
  RecordProperty("accepted", tally.specsAccepted);
  EXPECT_EQ(tally.inputs, 100000u);
  // Not vacuous: some mutations still make valid specs, most do not.
  EXPECT_GT(tally.specsAccepted, 100u);
  EXPECT_LT(tally.specsAccepted, 90000u);
}

TEST_F(Robustness, MutatedNames) {
  Tally tally;
  feed(2, corpus().names, 80000, tally);
  RecordProperty("accepted", tally.namesAccepted);
  EXPECT_EQ(tally.inputs, 80000u);
  EXPECT_GT(tally.namesAccepted, 100u);
  EXPECT_LT(tally.namesAccepted, 72000u);
}

TEST_F(Robustness, RandomBytes) {
  Tally tally;
  Mutator m(3, corpus().specs, corpus().words);
  for (unsigned i = 0; i < 20000 && !HasFailure(); ++i)
    checkInput(m.randomBytes(i % 2 ? 24 : 300), tally);
  EXPECT_EQ(tally.inputs, 20000u);
}

// Inputs shaped to hit limits: deep JSON, huge numbers, long names.
TEST_F(Robustness, Extremes) {
  Tally tally;
  for (const std::string &input :
       {std::string(1 << 20, '{'), "{\"d\":" + std::string(1 << 20, '['),
        "[" + std::string(1 << 20, '['), std::string(1 << 20, ','),
        "d=" + std::string(1 << 16, '9'), "fmha_" + std::string(1 << 16, '_'),
        std::string(1 << 16, 'a'), std::string("d=64\0,d=32", 10),
        std::string("fmha_fwd_bf16_d128_m64n64w1s1_vector_host\0", 43)})
    checkInput(input, tally);
}

} // namespace
