//===- Concurrently.h - Independent compiles on a thread pool -------------===//
//
// A cold kernel costs its code generation and, on a GPU, the driver's
// compile of the result, each on one core (docs/design.md, "Kernels of a
// plan compile side by side"). A plan's kernels (a forward and its combine,
// the backward's three), a profile's warm-up and the autotuner's candidates
// are independent, so they compile on a thread each. fmhajit's codegen runs
// side by side; a process's CUDA driver compiles one module at a time, so
// on a GPU what overlaps is one kernel's codegen with another's driver step.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

namespace fmhajit {

/// How many kernels compile at once: FMHAJIT_COMPILE_THREADS where it is a
/// positive integer (1 compiles one at a time, as before, for measurement),
/// else 0, one per hardware thread.
inline unsigned compileThreads() {
  const char *text = std::getenv("FMHAJIT_COMPILE_THREADS");
  unsigned value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value))
    return 0;
  return value;
}

/// Runs \p task(i) for every i below \p count, at most \p threads at a time
/// (0: one per hardware thread), and returns the results in index order.
/// One task, or one thread, runs on the caller's thread without a pool. A
/// task that runs on a pool thread starts with that thread's state fresh
/// (a GPU driver's current context, for one).
template <typename T>
std::vector<llvm::Expected<T>>
runConcurrently(size_t count, unsigned threads,
                llvm::function_ref<llvm::Expected<T>(size_t)> task) {
  std::vector<std::optional<llvm::Expected<T>>> slots(count);
  size_t width = std::min<size_t>(
      count, llvm::hardware_concurrency(threads).compute_thread_count());
  if (width <= 1) {
    for (size_t i = 0; i < count; ++i)
      slots[i].emplace(task(i));
  } else {
    llvm::StdThreadPool pool(llvm::hardware_concurrency(unsigned(width)));
    for (size_t i = 0; i < count; ++i)
      pool.async([&slots, &task, i] { slots[i].emplace(task(i)); });
    pool.wait();
  }
  std::vector<llvm::Expected<T>> results;
  results.reserve(count);
  for (std::optional<llvm::Expected<T>> &slot : slots)
    results.push_back(std::move(*slot));
  return results;
}

/// The values of \p results in order, or the first failure among them, as
/// a loop that stopped there would have reported it (the rest are dropped:
/// kernels of one target tend to fail alike).
template <typename T>
llvm::Expected<std::vector<T>>
valuesOrFirstError(std::vector<llvm::Expected<T>> results) {
  std::vector<T> values;
  values.reserve(results.size());
  llvm::Error first = llvm::Error::success();
  for (llvm::Expected<T> &result : results) {
    if (!result && !first)
      first = result.takeError();
    else if (!result)
      llvm::consumeError(result.takeError());
    else
      values.push_back(std::move(*result));
  }
  if (first)
    return std::move(first);
  return std::move(values);
}

} // namespace fmhajit
