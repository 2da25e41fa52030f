//===- PlanCache.h - The plans of this process, by problem ----------------===//
//
// api::plan() runs the dispatcher and looks kernels up in the kernel cache:
// microseconds to milliseconds. A Python call must cost little more than
// api::run(), so the module keeps every plan it made, keyed by all that
// plan() reads (Problem and Options, the stream aside: each run names its
// own), and plans a problem once per process.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fmhajit::python {

/// Everything api::plan() (or, \p backward, api::planBackward()) reads from
/// \p problem and \p options, as bytes written into \p buffer: a view of
/// them, valid until the buffer is written again. A caller that keeps its
/// buffer from call to call writes a key without allocating (the buffer
/// keeps the size of the longest key written).
std::string_view planKey(const api::Problem &problem,
                         const api::Options &options, bool backward,
                         std::string &buffer);

/// Plans by planKey(), shared by every thread.
class PlanCache {
public:
  std::optional<api::Plan> find(const std::string &key) const;
  void insert(const std::string &key, const api::Plan &plan);
  size_t size() const;
  void clear();

private:
  mutable std::mutex mutex;
  std::unordered_map<std::string, api::Plan> plans;
};

} // namespace fmhajit::python
