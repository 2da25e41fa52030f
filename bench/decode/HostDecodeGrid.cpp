//===- HostDecodeGrid.cpp - The decode grid on the host's cores -----------===//
//
// fmhajit-bench-decode --grid (--device host): the GPU grid's rows on the
// CPU, for the host comparison with PyTorch's CPU SDPA. A row times
// only what api::plan() chooses (every thread of the machine, or
// --num-threads), by the wall clock: one untimed call, then --reps calls,
// each reading the next of up to kCopies windows of the K/V pools so that
// small rows do not run from the last level cache; the median call. Its
// output, poisoned first, is compared with one query head per tile in one
// part (a pinned fwd_splitkv or fwd_paged kernel).
//
//===----------------------------------------------------------------------===//
#include "bench/decode/GpuDecodeGrid.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/Errors.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using namespace fmhajit;
using namespace fmhajit::bench;

static constexpr unsigned kCopies = 8;

struct HostDecodeBench::State {
  GpuGridOptions options;
  unsigned threads;
  HostTensor k, v;
};

HostDecodeBench::HostDecodeBench(std::unique_ptr<State> state)
    : state(std::move(state)) {}
HostDecodeBench::~HostDecodeBench() = default;

std::unique_ptr<HostDecodeBench>
HostDecodeBench::create(const GpuGridOptions &options, unsigned threads) {
  size_t elements = options.poolBytes / 2;
  auto st = std::unique_ptr<State>(
      new State{options, threads, HostTensor(DType::BF16, elements),
                HostTensor(DType::BF16, elements)});
  // One 64 MiB block of samples, repeated: filling a GiB costs seconds.
  size_t block = std::min<size_t>(elements, size_t(32) << 20);
  for (HostTensor *pool : {&st->k, &st->v}) {
    HostTensor sample(DType::BF16, block);
    sample.fillNormal(pool == &st->k ? 2 : 3);
    auto *to = static_cast<char *>(pool->data());
    for (size_t at = 0; at < elements; at += block)
      std::memcpy(to + 2 * at, sample.data(),
                  2 * std::min(block, elements - at));
  }
  return std::unique_ptr<HostDecodeBench>(new HostDecodeBench(std::move(st)));
}

namespace {
double seconds(std::chrono::steady_clock::time_point a,
               std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
} // namespace

llvm::Expected<DecodeGridRow> HostDecodeBench::run(const DecodeShape &s) {
  State &st = *state;
  size_t rows = size_t(s.pageSize ? s.batch * pagesPerSeq(s) * s.pageSize
                                  : s.batch * s.seqlenK);
  size_t tensor = rows * size_t(s.headsKv * s.d) * 2;
  if (tensor > st.k.sizeInBytes())
    return makeError(ErrorKind::Usage,
                     "the row's K/V does not fit the pools (--max-kv-mib)");
  int64_t poolPages = s.pageSize ? int64_t(st.k.sizeInBytes()) /
                                       (s.pageSize * s.headsKv * s.d * 2)
                                 : 0;
  unsigned copies =
      unsigned(std::clamp<size_t>(st.k.sizeInBytes() / tensor, 1, kCopies));
  HostTensor q(DType::BF16, size_t(s.batch * s.seqlenQ * s.headsQ * s.d)),
      o(DType::BF16, q.size());
  q.fillNormal(1);
  std::vector<int32_t> tables;
  if (s.pageSize) { // each copy's pages, disjoint while the pool allows
    std::vector<int32_t> pages(static_cast<size_t>(poolPages));
    std::iota(pages.begin(), pages.end(), 0);
    std::shuffle(pages.begin(), pages.end(), std::mt19937_64(s.seqlenK));
    size_t need = size_t(s.batch * pagesPerSeq(s));
    for (size_t i = 0; i < copies * need; ++i)
      tables.push_back(pages[i % pages.size()]);
  }
  auto tensorsOf = [&](unsigned c) {
    api::Tensors t;
    size_t at = s.pageSize ? 0 : c * tensor;
    t.q = q.data();
    t.k = static_cast<const char *>(st.k.data()) + at;
    t.v = static_cast<const char *>(st.v.data()) + at;
    t.o = o.data();
    if (s.pageSize)
      t.blockTable = tables.data() + c * s.batch * pagesPerSeq(s);
    return t;
  };
  api::Problem problem = pagedDecodeProblem(s, api::Device::Host, poolPages);
  api::Options options;
  options.threads = st.threads;
  auto runChecked =
      [&](const api::Plan &plan) -> llvm::Expected<std::vector<float>> {
    o.poison();
    api::Status status = api::run(plan, tensorsOf(0));
    if (!status.ok())
      return makeError(ErrorKind::Usage, "api::run: " + status.toString());
    return o.toFloat();
  };
  api::Options refOptions = options;
  refOptions.kernel = std::string("family=") +
                      (s.pageSize ? "fwd_paged" : "fwd_splitkv") +
                      ",dtype=bf16,d=" + std::to_string(s.d) +
                      (!s.pageSize && s.mixedMin > 0 ? ",varlen=1" : "");
  refOptions.numSplits = 1;
  api::Result<api::Plan> ref = api::plan(problem, refOptions);
  api::Result<api::Plan> plan = api::plan(problem, options);
  if (!ref.ok() || !plan.ok())
    return makeError(ErrorKind::Usage,
                     "api::plan: " +
                         (ref.ok() ? plan : ref).status().toString());
  auto refO = runChecked(*ref);
  if (!refO)
    return refO.takeError();
  auto planO = runChecked(*plan);
  if (!planO)
    return planO.takeError();
  CompareResult c =
      compareOutputs(*planO, std::vector<double>(refO->begin(), refO->end()),
                     {}, {}, DType::BF16);

  DecodeGridRow row;
  row.shape = s;
  row.planKernel = plan->steps().front().kernel;
  row.planSplits = unsigned(plan->steps().front().keySplits);
  row.planRelL2 = c.nonFinite ? INFINITY : c.relL2;
  row.kvBytes = double(totalKeys(s) * s.headsKv * s.d * 2 * 2);
  row.movedBytes =
      row.kvBytes + double(s.batch * s.seqlenQ * s.headsQ * s.d * 2 * 2);
  std::vector<double> times;
  for (unsigned i = 0; i <= st.options.reps; ++i) {
    auto begin = std::chrono::steady_clock::now();
    api::Status status = api::run(*plan, tensorsOf(i % copies));
    auto end = std::chrono::steady_clock::now();
    if (!status.ok())
      return makeError(ErrorKind::Usage, "api::run: " + status.toString());
    if (i > 0)
      times.push_back(seconds(begin, end) * 1e3);
  }
  llvm::sort(times);
  row.planMs = times[times.size() / 2];
  return std::move(row);
}
