//===- CliRobustnessTest.cpp - The fmhajit binary survives bad input ------===//
//
// Runs the built fmhajit a few hundred times on mutated specs, names and
// argument lists. Every run must end by itself with exit code 0, 1 or 2;
// a failure prints only `error:` lines on stderr and nothing on stdout; a
// success prints no error, and `name` prints a name that decodes.
//
//===----------------------------------------------------------------------===//
#include "specs/EncodedName.h"
#include "specs/Profile.h"
#include "specs/SpecParser.h"
#include "tests/unit/Mutator.h"
#include "tests/unit/SpecTesting.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

struct RunResult {
  int status;
  std::string out, err, why;
};

class CliRobustness : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(
        llvm::sys::fs::createTemporaryFile("fmhajit-cli", "out", outPath));
    ASSERT_FALSE(
        llvm::sys::fs::createTemporaryFile("fmhajit-cli", "err", errPath));
  }
  void TearDown() override {
    llvm::sys::fs::remove(outPath);
    llvm::sys::fs::remove(errPath);
  }

  RunResult run(const std::vector<std::string> &args) {
    std::vector<llvm::StringRef> argv = {FMHAJIT_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""),
                                                  outPath.str(), errPath.str()};
    // The child opens redirect files without truncating them.
    llvm::sys::fs::remove(outPath);
    llvm::sys::fs::remove(errPath);
    RunResult r;
    // A hang is a failure too: no run of these commands takes a second.
    r.status = llvm::sys::ExecuteAndWait(FMHAJIT_BINARY, argv, std::nullopt,
                                         redirects, /*SecondsToWait=*/20,
                                         /*MemoryLimit=*/0, &r.why);
    r.out = readFile(outPath);
    r.err = readFile(errPath);
    return r;
  }

  void check(const std::vector<std::string> &args) {
    RunResult r = run(args);
    std::string shown = escapeBytes(llvm::join(args, "' '"));
    ASSERT_TRUE(r.status == 0 || r.status == 1 || r.status == 2)
        << "fmhajit '" << shown << "' exited with " << r.status << " " << r.why
        << "\nstderr: " << r.err;
    if (r.status != 0) {
      EXPECT_TRUE(r.out.empty()) << shown;
      EXPECT_FALSE(r.err.empty()) << shown;
      for (llvm::StringRef line :
           llvm::split(llvm::StringRef(r.err).rtrim('\n'), '\n'))
        EXPECT_TRUE(line.starts_with("error: "))
            << shown << "\nstderr: " << r.err;
      return;
    }
    EXPECT_TRUE(r.err.empty()) << shown << "\nstderr: " << r.err;
    // --help or -h anywhere asks for the command's usage instead.
    bool help = llvm::StringRef(r.out).starts_with("usage: fmhajit ");
    if (args[0] == "name" && !help) {
      std::string name = llvm::StringRef(r.out).rtrim('\n').str();
      llvm::Expected<KernelSpec> spec = decodeName(name);
      EXPECT_TRUE(bool(spec)) << shown << " named " << name;
      if (!spec)
        llvm::consumeError(spec.takeError());
    }
  }

  static std::string readFile(llvm::StringRef path) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    return buffer ? (*buffer)->getBuffer().str() : std::string();
  }

  llvm::SmallString<128> outPath, errPath;
};

// argv cannot carry NUL bytes.
std::string argSafe(std::string s) {
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

std::vector<std::string> seedSpecs() {
  std::vector<std::string> out;
  llvm::Expected<std::vector<KernelSpec>> specs =
      expandProfile("smoke", std::nullopt);
  if (!specs)
    llvm::report_fatal_error(specs.takeError());
  for (const KernelSpec &s : *specs) {
    out.push_back(printSpec(s));
    out.push_back(printSpecJson(s));
  }
  return out;
}

std::vector<std::string> seedNames() {
  std::vector<std::string> out;
  llvm::Expected<std::vector<KernelSpec>> specs =
      expandProfile("all", std::nullopt);
  if (!specs)
    llvm::report_fatal_error(specs.takeError());
  for (const KernelSpec &s : *specs)
    out.push_back(encodeName(s));
  return out;
}

const std::vector<std::string> kWords = {
    "=",    ",",     "{",    "}",         "\"",       "_",
    "\n",   "d",     "mask", "causal",    "target",   "sm_90a",
    "host", "fmha_", "--",   "--profile", "--target", "-h"};

TEST_F(CliRobustness, MutatedSpecs) {
  Mutator m(11, seedSpecs(), kWords);
  for (unsigned i = 0; i < 120 && !HasFailure(); ++i)
    check({i % 2 ? "validate" : "name", argSafe(m.mutated())});
}

TEST_F(CliRobustness, MutatedNames) {
  Mutator m(12, seedNames(), kWords);
  for (unsigned i = 0; i < 100 && !HasFailure(); ++i)
    check({"decode", argSafe(m.mutated())});
}

// Random words after random commands: usage errors, never crashes.
TEST_F(CliRobustness, MutatedCommandLines) {
  const std::vector<std::string> commands = {
      "name",      "decode", "validate", "list", "demo", "--help",
      "--version", "nmae",   "",         "-",    "--",   "--list"};
  std::vector<std::string> words = kWords;
  words.insert(words.end(), {"all", "smoke", "--profile=all", "--target=gfx942",
                             "--target=", "--bogus", "d=64"});
  Mutator m(13, words, words);
  for (unsigned i = 0; i < 100 && !HasFailure(); ++i) {
    std::vector<std::string> args = {commands[m.below(commands.size())]};
    for (uint64_t n = m.below(4); n > 0; --n)
      args.push_back(
          argSafe(m.below(3) ? words[m.below(words.size())] : m.mutated()));
    check(args);
  }
}

} // namespace
