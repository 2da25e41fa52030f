//===- PlanCache.cpp - Plan keys and the cache ----------------------------===//
#include "python/src/PlanCache.h"
#include <cstring>
#include <type_traits>

using namespace fmhajit;
using namespace fmhajit::python;

namespace {
/// Appends fields to a key: fixed-size values as their bytes, vectors and
/// strings with their length first so that no two keys run together. The
/// bytes go straight into a buffer sized for a plain call's key, each field
/// a store, where std::string::append would be a call per field (a key is
/// some 60 fields, built at every call).
class KeyWriter {
public:
  KeyWriter() { key.resize(kPlainKeyBytes); }

  template <typename T> KeyWriter &add(const T &value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return write(&value, sizeof(T));
  }
  template <typename T> KeyWriter &add(const std::vector<T> &values) {
    add(values.size());
    return write(values.data(), values.size() * sizeof(T));
  }
  KeyWriter &add(const std::string &text) {
    add(text.size());
    return write(text.data(), text.size());
  }
  KeyWriter &add(const api::TensorLayout &l) {
    return add(l.layout).add(l.batchStride).add(l.seqStride).add(l.headStride);
  }

  /// The key, with room left for a suffix.
  std::string take() {
    key.resize(size);
    return std::move(key);
  }

private:
  // A plain call's key fits (no varlen, ALiBi or sinks vectors, no
  // variant, empty option strings): no regrowth.
  static constexpr size_t kPlainKeyBytes = 384;

  KeyWriter &write(const void *bytes, size_t n) {
    if (size + n > key.size())
      key.resize(2 * (size + n));
    if (n)
      std::memcpy(key.data() + size, bytes, n);
    size += n;
    return *this;
  }

  std::string key;
  size_t size = 0;
};
} // namespace

std::string python::planKey(const api::Problem &p, const api::Options &o) {
  KeyWriter w;
  w.add(p.batch).add(p.headsQ).add(p.headsKv).add(p.seqlenQ).add(p.seqlenK);
  w.add(p.cuSeqlensQ).add(p.cuSeqlensK).add(p.seqlensK);
  w.add(p.pagesKv.pageSize).add(p.pagesKv.numPages);
  w.add(p.pagesKv.maxPagesPerSeq);
  w.add(p.headDim).add(p.headDimV).add(p.dtype).add(p.outDtype.has_value());
  w.add(p.outDtype.value_or(p.dtype));
  w.add(p.q).add(p.k).add(p.v).add(p.o);
  w.add(p.mask).add(p.windowLeft).add(p.windowRight).add(p.softcap);
  w.add(p.alibi).add(p.alibiSlopes).add(p.scale).add(p.wantLse);
  w.add(p.dropout).add(p.sink).add(p.sinks).add(p.bias);
  w.add(p.biasStrides.has_value());
  w.add(p.biasStrides.value_or(api::BiasStrides{}));
  w.add(p.device);
  w.add(o.target).add(o.threads).add(o.load).add(o.autotune).add(o.cacheDir);
  w.add(o.kernel).add(o.numSplits).add(o.deterministic);
  // The variant's text itself, not a hash of it, so that two variants never
  // share a plan (its name only labels clang's messages); last, and only
  // when there is one, so that a plain call's key (and its cost) stays as
  // it was and never equals a longer key with a variant.
  if (!p.variant.empty())
    w.add(p.variant);
  return w.take();
}

std::optional<api::Plan> PlanCache::find(const std::string &key) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end())
    return std::nullopt;
  return it->second;
}

void PlanCache::insert(const std::string &key, const api::Plan &plan) {
  std::lock_guard<std::mutex> lock(mutex);
  plans.emplace(key, plan);
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mutex);
  return plans.size();
}

void PlanCache::clear() {
  std::lock_guard<std::mutex> lock(mutex);
  plans.clear();
}
