//===- PlanCache.cpp - Plan keys and the cache ----------------------------===//
#include "python/src/PlanCache.h"
#include <cstring>
#include <type_traits>

using namespace fmhajit;
using namespace fmhajit::python;

namespace {
/// The length of a key: what KeyBytes will write.
struct KeyLength {
  size_t bytes = 0;

  template <typename T> KeyLength &add(const T &) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes += sizeof(T);
    return *this;
  }
  template <typename T> KeyLength &add(const std::vector<T> &values) {
    bytes += sizeof(size_t) + values.size() * sizeof(T);
    return *this;
  }
  KeyLength &add(const std::string &text) {
    bytes += sizeof(size_t) + text.size();
    return *this;
  }
};

/// Writes fields into a buffer KeyLength sized: fixed-size values as their
/// bytes, vectors and strings with their length first so that no two keys
/// run together. Each field is a store at a pointer the writer holds in a
/// register (a key is some 60 fields, written at every call), where
/// std::string::append would be a call per field.
struct KeyBytes {
  char *next;

  template <typename T> KeyBytes &add(const T &value) {
    std::memcpy(next, &value, sizeof(T));
    next += sizeof(T);
    return *this;
  }
  template <typename T> KeyBytes &add(const std::vector<T> &values) {
    add(values.size());
    return write(values.data(), values.size() * sizeof(T));
  }
  KeyBytes &add(const std::string &text) {
    add(text.size());
    return write(text.data(), text.size());
  }

private:
  KeyBytes &write(const void *bytes, size_t n) {
    if (n)
      std::memcpy(next, bytes, n);
    next += n;
    return *this;
  }
};
} // namespace

// Every field of a key, in order, to \p w (KeyLength, then KeyBytes).
template <typename Writer>
static void writeKey(Writer &w, const api::Problem &p, const api::Options &o,
                     bool backward) {
  auto layout = [&w](const api::TensorLayout &l) {
    w.add(l.layout).add(l.batchStride).add(l.seqStride).add(l.headStride);
  };
  w.add(backward);
  w.add(p.batch).add(p.headsQ).add(p.headsKv).add(p.seqlenQ).add(p.seqlenK);
  w.add(p.cuSeqlensQ).add(p.cuSeqlensK).add(p.seqlensK);
  w.add(p.pagesKv.pageSize).add(p.pagesKv.numPages);
  w.add(p.pagesKv.maxPagesPerSeq);
  w.add(p.headDim).add(p.headDimV).add(p.dtype).add(p.outDtype.has_value());
  w.add(p.outDtype.value_or(p.dtype));
  for (const api::TensorLayout *l : {&p.q, &p.k, &p.v, &p.o})
    layout(*l);
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
}

std::string_view python::planKey(const api::Problem &p, const api::Options &o,
                                 bool backward, std::string &buffer) {
  KeyLength length;
  writeKey(length, p, o, backward);
  if (buffer.size() < length.bytes)
    buffer.resize(length.bytes);
  KeyBytes bytes{buffer.data()};
  writeKey(bytes, p, o, backward);
  return {buffer.data(), length.bytes};
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
