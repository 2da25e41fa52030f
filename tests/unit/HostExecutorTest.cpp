//===- HostExecutorTest.cpp - The host's fork-join pool ------------------===//
//
// Every item of every job runs exactly once, whether the workers are still
// spinning from the last job or asleep (runtime/device/HostExecutor.h), and
// an executor whose workers sleep is destroyed without hanging.
//
//===----------------------------------------------------------------------===//
#include "runtime/device/HostExecutor.h"
#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

using namespace fmhajit;

namespace {
std::vector<std::atomic<int>> *runs = nullptr; // the current job's counts

void countItems(const KernelArgs *, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    (*runs)[size_t(i)]++;
}

void runJobs(unsigned threads, int jobs, std::chrono::microseconds pause) {
  HostExecutor executor(threads);
  KernelArgs args{};
  for (int job = 0; job < jobs; ++job) {
    int64_t count = 1 + job % 37;
    std::vector<std::atomic<int>> counts(static_cast<size_t>(count));
    runs = &counts;
    executor.run(countItems, args, count);
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(counts[size_t(i)].load(), 1)
          << "item " << i << " of job " << job << " on " << threads
          << " threads";
    std::this_thread::sleep_for(pause);
  }
  runs = nullptr;
}
} // namespace

TEST(HostExecutor, JobsBackToBackRunEachItemOnce) {
  runJobs(2, 2000, std::chrono::microseconds(0));
  runJobs(4, 2000, std::chrono::microseconds(0));
}

// Past the workers' spin (200 us), each job finds them asleep.
TEST(HostExecutor, JobsAfterTheWorkersSleepRunEachItemOnce) {
  runJobs(3, 40, std::chrono::milliseconds(1));
}
