//===- ConcurrentlyTest.cpp - Independent compiles side by side -----------===//
//
// runConcurrently (compiler/Concurrently.h) keeps results in index order
// whatever order the tasks finish in, really runs tasks at once, and
// valuesOrFirstError reports what a loop that stopped at the first failure
// would have. compileProfile (runtime/api/ProfileWarmup.h) warms a profile
// side by side into the same files as one at a time.
//
//===----------------------------------------------------------------------===//
#include "compiler/Concurrently.h"
#include "runtime/api/ProfileWarmup.h"
#include "specs/Errors.h"
#include "tests/unit/ScopedEnv.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <thread>

using namespace fmhajit;

namespace {

TEST(ConcurrentlyTest, ResultsKeepIndexOrder) {
  for (unsigned threads : {0u, 1u, 2u, 5u})
    for (size_t count : {0, 1, 2, 9}) {
      // Later indices finish first.
      auto results = runConcurrently<size_t>(
          count, threads, [&](size_t i) -> llvm::Expected<size_t> {
            std::this_thread::sleep_for(
                std::chrono::milliseconds(2 * (count - i)));
            return i * i;
          });
      ASSERT_EQ(results.size(), count);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_TRUE(bool(results[i]));
        EXPECT_EQ(*results[i], i * i) << "threads " << threads;
      }
    }
}

// Two tasks that each wait for the other to start finish only when they run
// at once; a bounded wait keeps a serial run from hanging the test.
TEST(ConcurrentlyTest, TasksRunAtOnce) {
  std::mutex mutex;
  std::condition_variable started;
  int running = 0;
  auto results =
      runConcurrently<bool>(2, 2, [&](size_t) -> llvm::Expected<bool> {
        std::unique_lock<std::mutex> lock(mutex);
        ++running;
        started.notify_all();
        return started.wait_for(lock, std::chrono::seconds(20),
                                [&] { return running == 2; });
      });
  ASSERT_TRUE(results[0] && results[1]);
  EXPECT_TRUE(*results[0] && *results[1]);
}

TEST(ConcurrentlyTest, OneThreadRunsOnTheCaller) {
  std::thread::id caller = std::this_thread::get_id();
  auto results =
      runConcurrently<bool>(3, 1, [&](size_t) -> llvm::Expected<bool> {
        return std::this_thread::get_id() == caller;
      });
  for (auto &r : results)
    EXPECT_TRUE(r && *r);
}

TEST(ConcurrentlyTest, FirstErrorInIndexOrderWins) {
  auto results =
      runConcurrently<int>(4, 4, [](size_t i) -> llvm::Expected<int> {
        if (i == 0)
          return 7;
        return makeError(ErrorKind::Jit, "task " + std::to_string(i));
      });
  auto values = valuesOrFirstError(std::move(results));
  ASSERT_FALSE(bool(values));
  Problems problems = takeProblems(values.takeError());
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_EQ(problems.messages[0], "task 1");

  auto ok = valuesOrFirstError(runConcurrently<int>(
      3, 0, [](size_t i) -> llvm::Expected<int> { return int(i) + 1; }));
  ASSERT_TRUE(bool(ok));
  EXPECT_EQ(*ok, (std::vector<int>{1, 2, 3}));
}

TEST(ConcurrentlyTest, CompileThreadsReadsTheEnvironment) {
  ScopedEnv env;
  env.set("FMHAJIT_COMPILE_THREADS", nullptr);
  EXPECT_EQ(compileThreads(), 0u);
  env.set("FMHAJIT_COMPILE_THREADS", "1");
  EXPECT_EQ(compileThreads(), 1u);
  env.set("FMHAJIT_COMPILE_THREADS", "3");
  EXPECT_EQ(compileThreads(), 3u);
  env.set("FMHAJIT_COMPILE_THREADS", "many");
  EXPECT_EQ(compileThreads(), 0u);
}

/// Every file of \p dir by name, with its bytes.
std::map<std::string, std::string> filesOf(const std::string &dir) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    auto buffer = llvm::MemoryBuffer::getFile(it->path());
    files[llvm::sys::path::filename(it->path()).str()] =
        buffer ? (*buffer)->getBuffer().str() : "<unreadable>";
  }
  return files;
}

llvm::Expected<size_t> warmInto(const std::string &dir, const char *threads) {
  ScopedEnv env;
  env.set("FMHAJIT_COMPILE_THREADS", threads);
  CacheConfig config;
  config.dir = dir;
  auto cache = KernelCache::create(std::move(config));
  if (!cache)
    return cache.takeError();
  return compileProfile("smoke", "sm_90a", **cache);
}

// The smoke profile's sm_90a kernels (PTX: no host code, nothing loaded),
// warmed one at a time and four at a time, give the same files.
TEST(ConcurrentlyTest, ProfileWarmsSideBySideIntoTheSameFiles) {
  llvm::SmallString<128> root;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("fmhajit-warm-test", root));
  std::string serial = (root + "/serial").str(),
              parallel = (root + "/parallel").str();
  auto one = warmInto(serial, "1");
  auto four = warmInto(parallel, "4");
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  ASSERT_TRUE(bool(four)) << llvm::toString(four.takeError());
  EXPECT_EQ(*one, *four);
  auto serialFiles = filesOf(serial), parallelFiles = filesOf(parallel);
  EXPECT_GE(serialFiles.size(), *one);
  EXPECT_TRUE(serialFiles == parallelFiles);
  llvm::sys::fs::remove_directories(root);
}

} // namespace
