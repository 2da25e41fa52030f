//===- FmaPeak.cpp - The FMA limit of this machine, measured in this run --===//
#include "bench/host/FmaPeak.h"
#include "bench/host/BenchTimer.h"
#include "bench/host/FmaChains.h"
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

using namespace fmhajit::bench;

unsigned fmhajit::bench::fmaWidthBits() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return 512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return 256;
  return 0;
}

static float runChains(unsigned widthBits, uint64_t iterations) {
  return widthBits == 512 ? fmaChains512(iterations) : fmaChains256(iterations);
}

static double flopsPerIteration(unsigned widthBits) {
  return widthBits == 512 ? kFlopsPerIteration512 : kFlopsPerIteration256;
}

// Iterations that take about \p seconds on one thread.
static uint64_t calibrate(unsigned widthBits, double seconds) {
  uint64_t iterations = 1 << 16;
  for (;;) {
    Clock::time_point start = Clock::now();
    runChains(widthBits, iterations);
    double took = secondsSince(start);
    if (took > 0.02 || iterations > (uint64_t(1) << 40))
      return std::max<uint64_t>(1, uint64_t(iterations * seconds / took));
    iterations *= 4;
  }
}

// \p threads threads each running \p iterations, released at once so they
// overlap.
static void runConcurrent(unsigned widthBits, unsigned threads,
                          uint64_t iterations) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::atomic<float> sink{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      ready++;
      while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
      sink = sink + runChains(widthBits, iterations);
    });
  while (ready.load() < threads)
    std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (std::thread &t : pool)
    t.join();
}

FmaWork::FmaWork(unsigned threads, double seconds)
    : threads(threads), widthBits(fmaWidthBits()),
      iterations(calibrate(widthBits, seconds)),
      flops(flopsPerIteration(widthBits) * double(iterations) * threads) {}

void FmaWork::run() const { runConcurrent(widthBits, threads, iterations); }

FmaPeak fmhajit::bench::measureFmaPeak(unsigned threads, double seconds,
                                       unsigned repeats) {
  FmaPeak peak;
  peak.threads = threads;
  peak.widthBits = fmaWidthBits();
  if (!peak.widthBits)
    return peak;
  peak.accumulators = peak.widthBits == 512 ? kChains512 : kChains256;
  peak.repeats = repeats;
  FmaWork work(threads, seconds);
  for (unsigned r = 0; r < repeats; ++r) {
    // Thread start-up is inside the time: microseconds against 0.2 s.
    Clock::time_point start = Clock::now();
    work.run();
    peak.gflops = std::max(peak.gflops, work.gflops(secondsSince(start)));
  }
  return peak;
}
