//===- CompileFuzzTest.cpp - No spec validation accepts crashes the compiler
//===//
//
// Draws random specs over every target, family, pipeline, tile (bm, bn,
// warps, stages) and feature, biased towards what validation accepts,
// validates each and compiles every accepted one to its loadable artifact
// in-process (compileToStage(Obj): PTX, .hsaco through lld, host ELF). An
// accepted spec must compile, or fail with an Unsupported error (a feature
// the recipes do not implement); a rejected one must fail with Spec errors
// that each name key=value. A crash prints the specs in flight (a signal
// handler), and a compile past the per-spec limit aborts the test naming it.
// Regression for issue 11 (a valid mma spec overran a register array).
//
// Spec i is drawn from (seed, i) alone, so a failure reproduces from the
// printed seed and index, whatever the threads did. Environment:
//   FMHAJIT_FUZZ_SEED      the seed (default: the clock; always printed)
//   FMHAJIT_FUZZ_SECONDS   stop drawing after this long (default 45; compiles
//                          in flight finish, so a run takes about a minute)
//   FMHAJIT_FUZZ_MIN_SPECS validate at least this many anyway (default 300)
//   FMHAJIT_FUZZ_THREADS   compile threads (default: the hardware's)
//   FMHAJIT_FUZZ_SPEC_LIMIT seconds one compile may take (default 300)
//   FMHAJIT_FUZZ_STAGE     llvm, opt, asm or obj (default): how far to
//                          compile; llvm covers the emitters many times faster
//
//===----------------------------------------------------------------------===//
#include "compiler/KernelCompiler.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "tests/unit/FuzzSpecs.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/Signals.h"
#include "gtest/gtest.h"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

using namespace fmhajit;
using Clock = std::chrono::steady_clock;

namespace {

uint64_t envNumber(const char *name, uint64_t fallback) {
  const char *text = std::getenv(name);
  uint64_t value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value))
    return fallback;
  return value;
}

constexpr unsigned kMaxThreads = 64;
constexpr size_t kSpecText = 512;

/// What each thread is compiling, for the crash handler and the watchdog:
/// written before and cleared after each compile.
struct InFlight {
  char spec[kSpecText] = {};
  std::atomic<int64_t> startMs{-1}; ///< -1: idle
};
InFlight gInFlight[kMaxThreads];

// Runs on a crash signal: only async-signal-safe calls (write).
void printInFlight(void *) {
  const char header[] =
      "\nCompileFuzzTest: specs being compiled at the crash:\n";
  ssize_t ignored = write(2, header, sizeof(header) - 1);
  for (InFlight &f : gInFlight)
    if (f.startMs.load() >= 0) {
      ignored = write(2, f.spec, strnlen(f.spec, kSpecText));
      ignored = write(2, "\n", 1);
    }
  (void)ignored;
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             Clock::now().time_since_epoch())
      .count();
}

struct Tally {
  std::mutex mutex;
  unsigned drawn = 0, invalid = 0, compiled = 0, unsupported = 0;
  std::vector<std::string> failures;
  double slowestS = 0; ///< the longest compile, and its spec
  std::string slowest;

  void fail(const std::string &what) {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back(what);
  }
};

/// Every problem of a rejected spec is a Spec error naming key=value.
void checkRejection(llvm::Error err, const std::string &label, Tally &tally) {
  static const llvm::Regex kNamesKey("^[a-z]+=[^ ]*: .+");
  std::vector<std::string> bad;
  llvm::handleAllErrors(
      std::move(err),
      [&](const FmhaError &e) {
        if (e.getKind() != ErrorKind::Spec || !kNamesKey.match(e.getMessage()))
          bad.push_back(e.getMessage());
      },
      [&](const llvm::ErrorInfoBase &e) { bad.push_back(e.message()); });
  if (!bad.empty())
    tally.fail(label +
               ": rejected without naming key=value: " + llvm::join(bad, "; "));
}

/// An accepted spec compiles to a non-empty artifact or is Unsupported.
void checkCompile(const KernelSpec &spec, Stage stage, const std::string &label,
                  Tally &tally) {
  llvm::Expected<std::string> code = compileToStage(spec, stage);
  if (code) {
    if (code->empty())
      tally.fail(label + ": compiled to nothing");
    std::lock_guard<std::mutex> lock(tally.mutex);
    ++tally.compiled;
    return;
  }
  Problems problems = takeProblems(code.takeError());
  if (problems.kind != ErrorKind::Unsupported)
    tally.fail(label + ": valid but failed to compile: " +
               llvm::join(problems.messages, "; "));
  std::lock_guard<std::mutex> lock(tally.mutex);
  ++tally.unsupported;
}

struct FuzzRun {
  uint64_t seed;
  Clock::time_point stopDrawing;
  unsigned minSpecs;
  Stage stage;
  std::atomic<unsigned> next{0};
  Tally tally;

  unsigned drawnSoFar() {
    std::lock_guard<std::mutex> lock(tally.mutex);
    return tally.drawn;
  }

  /// Draws, validates and compiles specs until time is up.
  void work(InFlight &slot) {
    for (;;) {
      if (Clock::now() >= stopDrawing && drawnSoFar() >= minSpecs)
        return;
      unsigned i = next.fetch_add(1);
      if (std::optional<KernelSpec> spec = drawValid(i))
        compile(*spec,
                "spec #" + std::to_string(i) + " '" + printSpec(*spec) + "'",
                slot);
    }
  }

  // Three specs in four retry their draw until validation accepts one, so
  // that most of the time goes to compiling; the fourth keeps its first
  // draw. Every refusal is checked.
  std::optional<KernelSpec> drawValid(unsigned i) {
    constexpr unsigned kTries = 200;
    for (unsigned attempt = 0; attempt < (i % 4 ? kTries : 1); ++attempt) {
      KernelSpec drawn = drawFuzzSpec(seed, i, attempt);
      llvm::Expected<KernelSpec> spec = validateSpec(drawn);
      {
        std::lock_guard<std::mutex> lock(tally.mutex);
        ++tally.drawn;
        tally.invalid += !spec;
      }
      if (spec)
        return *spec;
      checkRejection(spec.takeError(),
                     "spec #" + std::to_string(i) + "." +
                         std::to_string(attempt) + " '" + printSpec(drawn) +
                         "'",
                     tally);
    }
    return std::nullopt;
  }

  void compile(const KernelSpec &spec, const std::string &label,
               InFlight &slot) {
    strncpy(slot.spec, label.c_str(), kSpecText - 1);
    int64_t startMs = slot.startMs = nowMs();
    checkCompile(spec, stage, label, tally);
    slot.startMs = -1;
    double seconds = (nowMs() - startMs) / 1000.0;
    std::lock_guard<std::mutex> lock(tally.mutex);
    if (seconds > tally.slowestS) {
      tally.slowestS = seconds;
      tally.slowest = label;
    }
  }
};

// Polls the workers: a compile past the limit is a hang, and a hung thread
// cannot be stopped, so the test aborts naming the spec.
void watch(std::vector<std::thread> &workers, std::atomic<unsigned> &done,
           unsigned limitS) {
  while (done.load() < workers.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (InFlight &f : gInFlight) {
      int64_t start = f.startMs.load();
      if (start >= 0 && nowMs() - start > int64_t(limitS) * 1000) {
        fprintf(stderr, "CompileFuzzTest: %s took over %u s to compile\n",
                f.spec, limitS);
        std::abort();
      }
    }
  }
}

TEST(CompileFuzz, EveryValidSpecCompilesOrIsUnsupported) {
  FuzzRun run;
  run.seed = envNumber("FMHAJIT_FUZZ_SEED", uint64_t(nowMs()));
  run.stopDrawing = Clock::now() +
                    std::chrono::seconds(envNumber("FMHAJIT_FUZZ_SECONDS", 45));
  run.minSpecs = envNumber("FMHAJIT_FUZZ_MIN_SPECS", 300);
  const char *stage = std::getenv("FMHAJIT_FUZZ_STAGE");
  run.stage = parseStage(stage ? stage : "obj").value_or(Stage::Obj);
  unsigned threads =
      envNumber("FMHAJIT_FUZZ_THREADS", std::thread::hardware_concurrency());
  threads = std::clamp(threads, 1u, kMaxThreads);
  printf("CompileFuzz: FMHAJIT_FUZZ_SEED=%llu, %u threads\n",
         (unsigned long long)run.seed, threads);
  fflush(stdout); // before any crash
  llvm::sys::AddSignalHandler(printInFlight, nullptr);
  Clock::time_point start = Clock::now();
  std::atomic<unsigned> done{0};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      run.work(gInFlight[t]);
      ++done;
    });
  watch(workers, done, envNumber("FMHAJIT_FUZZ_SPEC_LIMIT", 300));
  for (std::thread &w : workers)
    w.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Tally &t = run.tally;
  printf("CompileFuzz: %u specs in %.1f s: %u rejected by validation, %u "
         "compiled, %u "
         "unsupported (%.0f compiled a minute)\n",
         t.drawn, seconds, t.invalid, t.compiled, t.unsupported,
         t.compiled * 60 / seconds);
  printf("CompileFuzz: slowest compile %.1f s: %s\n", t.slowestS,
         t.slowest.c_str());
  for (size_t i = 0; i < t.failures.size() && i < 20; ++i)
    ADD_FAILURE() << "seed " << run.seed << ", " << t.failures[i];
  EXPECT_TRUE(t.failures.empty()) << t.failures.size() << " failures";
  EXPECT_GE(t.drawn, run.minSpecs);
  EXPECT_GT(t.invalid, 0u) << "the draws should reach invalid specs too";
  EXPECT_GT(t.compiled, 0u);
}

} // namespace
