//===- GpuDecodeRunner.cpp - One decode row of the grid on a CUDA GPU -----===//
//
// GpuDecodeGrid.h says what a row times. Every contender is an api::Plan
// (the dispatcher's, or one pinned by Options::kernel and numSplits) run
// through api::run() on one stream, so the plan and the configurations it
// could have picked go through the same code. K/V come from two pools of
// random bf16 filled once; a row's runs rotate over up to kCopies disjoint
// windows of the pools (contiguous: a window's BSHD tensors; paged: a block
// table of pages drawn from the whole pool, in shuffled order).
//
//===----------------------------------------------------------------------===//
#include "bench/decode/GpuDecodeGrid.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/device/GpuResources.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

using namespace fmhajit;
using namespace fmhajit::bench;

static constexpr unsigned kCopies = 8;

struct GpuDecodeBench::State {
  GpuGridOptions options;
  GpuDriver &driver;
  GpuStream stream;
  GpuTimer timer;
  GpuBuffer k, v;
  std::set<std::string> refused; ///< configurations already reported

  State(GpuGridOptions options, GpuDriver &driver, GpuStream stream,
        GpuTimer timer, GpuBuffer k, GpuBuffer v)
      : options(std::move(options)), driver(driver), stream(std::move(stream)),
        timer(std::move(timer)), k(std::move(k)), v(std::move(v)) {}
};

GpuDecodeBench::GpuDecodeBench(std::unique_ptr<State> state)
    : state(std::move(state)) {}
GpuDecodeBench::~GpuDecodeBench() = default;

/// Fills \p pool with copies of one 64 MiB block of normal samples.
static llvm::Error fillPool(GpuDriver &driver, GpuBuffer &pool, uint64_t seed) {
  size_t block = std::min<size_t>(pool.size(), size_t(64) << 20);
  HostTensor host(DType::BF16, int64_t(block / 2));
  host.fillNormal(seed);
  for (size_t at = 0; at < pool.size(); at += block)
    if (llvm::Error err =
            driver.copyToDevice(static_cast<char *>(pool.pointer()) + at,
                                host.data(), std::min(block, pool.size() - at)))
      return err;
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<GpuDecodeBench>>
GpuDecodeBench::create(const GpuGridOptions &options) {
  auto driver = gpuDriverFor(Backend::Nvptx);
  if (!driver)
    return driver.takeError();
  auto stream = GpuStream::create(*driver);
  if (!stream)
    return stream.takeError();
  auto timer = GpuTimer::create(*driver);
  if (!timer)
    return timer.takeError();
  auto k = GpuBuffer::create(*driver, options.poolBytes, "K pool");
  if (!k)
    return k.takeError();
  auto v = GpuBuffer::create(*driver, options.poolBytes, "V pool");
  if (!v)
    return v.takeError();
  if (llvm::Error err = fillPool(*driver, *k, 2))
    return std::move(err);
  if (llvm::Error err = fillPool(*driver, *v, 3))
    return std::move(err);
  return std::unique_ptr<GpuDecodeBench>(new GpuDecodeBench(
      std::make_unique<State>(options, *driver, std::move(*stream),
                              std::move(*timer), std::move(*k),
                              std::move(*v))));
}

std::string GpuDecodeBench::describe() const {
  const GpuDeviceInfo &d = state->driver.device();
  return d.name + ", " + std::to_string(d.computeUnits) + " SMs";
}

namespace {
/// The device buffers of one row and the Tensors of each copy.
struct RowData {
  GpuBuffer q, o, workspace, tables, lengths, cuSeqlensQ, cuSeqlensK;
  std::vector<api::Tensors> copies;
};

/// Bytes of one K (or V) of the row: rows * Hkv * d bf16 (paged: every
/// sequence's table row in pages, the longest's length).
size_t kvTensorBytes(const DecodeShape &s) {
  int64_t rows =
      s.pageSize ? s.batch * pagesPerSeq(s) * s.pageSize : totalKeys(s);
  return size_t(rows * s.headsKv * s.d * 2);
}

/// \p copies block tables, each [batch, pagesPerSeq] of distinct pages of
/// a \p poolPages pool in shuffled order (\p inOrder: consecutive),
/// disjoint while the pool allows.
std::vector<int32_t> blockTables(const DecodeShape &s, int64_t poolPages,
                                 unsigned copies, bool inOrder) {
  std::vector<int32_t> pages(static_cast<size_t>(poolPages));
  std::iota(pages.begin(), pages.end(), 0);
  std::mt19937_64 rng(uint64_t(s.seqlenK * 31 + s.batch));
  if (!inOrder)
    std::shuffle(pages.begin(), pages.end(), rng);
  size_t need = size_t(s.batch * pagesPerSeq(s));
  std::vector<int32_t> tables;
  for (unsigned c = 0; c < copies; ++c)
    for (size_t i = 0; i < need; ++i)
      tables.push_back(pages[(c * need + i) % pages.size()]);
  return tables;
}
} // namespace

static llvm::Expected<RowData> makeRowData(GpuDecodeBench::State &st,
                                           const DecodeShape &s,
                                           int64_t poolPages) {
  RowData data;
  HostTensor q(DType::BF16, s.batch * s.seqlenQ * s.headsQ * s.d);
  q.fillNormal(1);
  auto qb = GpuBuffer::upload(st.driver, q.data(), q.sizeInBytes(), "q");
  auto ob = GpuBuffer::create(st.driver, q.sizeInBytes(), "o");
  if (!qb || !ob)
    return llvm::joinErrors(qb.takeError(), ob.takeError());
  data.q = std::move(*qb), data.o = std::move(*ob);
  size_t tensor = kvTensorBytes(s);
  unsigned copies =
      unsigned(std::clamp<size_t>(st.k.size() / tensor, 1, kCopies));
  std::vector<int32_t> tables;
  std::vector<int32_t> lengths = keyLengths(s);
  if (!s.pageSize && s.mixedMin > 0) { // varlen: device cu_seqlens
    api::Problem p = pagedDecodeProblem(s, api::Device::Cuda, 0);
    auto qb = GpuBuffer::upload(st.driver, p.cuSeqlensQ.data(),
                                p.cuSeqlensQ.size() * 4, "cu_seqlens_q");
    auto kb = GpuBuffer::upload(st.driver, p.cuSeqlensK.data(),
                                p.cuSeqlensK.size() * 4, "cu_seqlens_k");
    if (!qb || !kb)
      return llvm::joinErrors(qb.takeError(), kb.takeError());
    data.cuSeqlensQ = std::move(*qb), data.cuSeqlensK = std::move(*kb);
  }
  if (s.pageSize) {
    tables = blockTables(s, poolPages, copies, st.options.pagesInOrder);
    auto tb = GpuBuffer::upload(st.driver, tables.data(), tables.size() * 4,
                                "block tables");
    auto lb = GpuBuffer::upload(st.driver, lengths.data(), lengths.size() * 4,
                                "seqlens_k");
    if (!tb || !lb)
      return llvm::joinErrors(tb.takeError(), lb.takeError());
    data.tables = std::move(*tb), data.lengths = std::move(*lb);
  }
  for (unsigned c = 0; c < copies; ++c) {
    api::Tensors t;
    size_t at = s.pageSize ? 0 : c * tensor;
    t.q = data.q.pointer();
    t.k = static_cast<char *>(st.k.pointer()) + at;
    t.v = static_cast<char *>(st.v.pointer()) + at;
    t.o = data.o.pointer();
    if (data.cuSeqlensK.size()) {
      t.cuSeqlensQ = static_cast<const int32_t *>(data.cuSeqlensQ.pointer());
      t.cuSeqlensK = static_cast<const int32_t *>(data.cuSeqlensK.pointer());
    }
    if (s.pageSize) {
      t.blockTable = static_cast<const int32_t *>(data.tables.pointer()) +
                     c * s.batch * pagesPerSeq(s);
      t.seqlensK = static_cast<const int32_t *>(data.lengths.pointer());
    }
    t.stream = st.stream.get();
    data.copies.push_back(t);
  }
  return std::move(data);
}

/// Timed batches of a contender: at least kLeastBatches, and more until
/// kLeastTimedMs of them have run. A call of 8-10 us makes a batch of --reps
/// under 0.1 ms, which one pause of the host can slow by half: with three
/// batches such calls read up to 30% apart from one contender to the next
/// (session 28), so short calls take the median of many.
static constexpr int kLeastBatches = 3, kMostBatches = 64;
static constexpr double kLeastTimedMs = 5;

/// Milliseconds per run of \p plan: after --warmup-ms of untimed batches
/// (each contender follows a check whose comparison on the host leaves the
/// GPU idle), batches of --reps back-to-back runs between two events,
/// rotating over the row's copies of K/V; the median batch's mean. Back to
/// back, a run's launch overlaps the one before, as in serving, so a short
/// kernel is not timed with the host's launch cost in front of it.
static llvm::Expected<double> timePlan(GpuDecodeBench::State &st,
                                       const api::Plan &plan, RowData &data) {
  unsigned next = 0;
  auto runOnce = [&]() -> llvm::Error {
    api::Tensors t = data.copies[next++ % data.copies.size()];
    t.workspace = data.workspace.pointer();
    api::Status s = api::run(plan, t);
    return s.ok() ? llvm::Error::success()
                  : makeError(ErrorKind::Driver, "api::run: " + s.toString());
  };
  auto runBatch = [&]() -> llvm::Error {
    for (unsigned i = 0; i < st.options.reps; ++i)
      if (llvm::Error err = runOnce())
        return err;
    return llvm::Error::success();
  };
  // Batches waited for, so that the warm-up ends after --warmup-ms of the
  // GPU's work or one batch, whichever is longer: launches queued for that
  // long on the host would hold hundreds of a long call.
  auto warmUntil = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(st.options.warmUpMs);
  do {
    if (llvm::Error err = runBatch())
      return std::move(err);
    if (llvm::Error err = st.stream.synchronize())
      return std::move(err);
  } while (std::chrono::steady_clock::now() < warmUntil);
  std::vector<double> means;
  double timedMs = 0;
  while (int(means.size()) < kMostBatches &&
         (int(means.size()) < kLeastBatches || timedMs < kLeastTimedMs)) {
    auto ms = timedLaunch(st.timer, st.stream.get(), runBatch);
    if (!ms)
      return ms.takeError();
    means.push_back(*ms / st.options.reps);
    timedMs += *ms;
  }
  llvm::sort(means);
  return means[means.size() / 2];
}

/// Runs \p plan once on the first copy into a poisoned O; O's relative L2
/// error against \p ref (empty: O becomes the reference).
static llvm::Expected<double> checkPlan(GpuDecodeBench::State &st,
                                        const api::Plan &plan, RowData &data,
                                        std::vector<double> &ref) {
  // The poison is a memset on the default stream: wait for it.
  if (llvm::Error err = data.o.poison(DType::BF16))
    return std::move(err);
  if (llvm::Error err = st.driver.synchronize(nullptr))
    return std::move(err);
  api::Tensors t = data.copies.front();
  t.workspace = data.workspace.pointer();
  api::Status s = api::run(plan, t);
  if (!s.ok())
    return makeError(ErrorKind::Driver, "api::run: " + s.toString());
  if (llvm::Error err = st.stream.synchronize())
    return std::move(err);
  HostTensor o(DType::BF16, int64_t(data.o.size() / 2));
  if (llvm::Error err = data.o.copyTo(o.data(), data.o.size()))
    return std::move(err);
  std::vector<float> got = o.toFloat();
  if (ref.empty()) {
    ref.assign(got.begin(), got.end());
    bool finite = llvm::all_of(got, [](float x) { return std::isfinite(x); });
    return finite ? 0.0 : INFINITY;
  }
  CompareResult c = compareOutputs(got, ref, {}, {}, DType::BF16);
  return c.nonFinite ? INFINITY : c.relL2; // a NaN the poison left counts
}

/// Grows the row's workspace to \p plan's need.
static llvm::Error fitWorkspace(GpuDecodeBench::State &st, RowData &data,
                                const api::Plan &plan) {
  size_t need = size_t(plan.workspaceBytes());
  if (need <= data.workspace.size())
    return llvm::Error::success();
  data.workspace = GpuBuffer();
  auto w = GpuBuffer::create(st.driver, need, "workspace");
  if (!w)
    return w.takeError();
  data.workspace = std::move(*w);
  return llvm::Error::success();
}

/// Whether a part count is worth a row's time: each part keeps one key
/// tile at least, and the grid stays under kMaxBlocks blocks (62 per SM of
/// an H100, far past where more blocks stop helping).
static bool worthTiming(const DecodeShape &s, const std::string &tile,
                        bool packed, unsigned n) {
  constexpr int64_t kMaxBlocks = 8192;
  auto spec = parseSpec("family=fwd_splitkv," + tile);
  if (!spec || !spec->bm || !spec->bn)
    return n == 1; // a tile left to the arch: time it unsplit only
  int64_t rows = (packed ? s.headsQ / s.headsKv : 1) * s.seqlenQ;
  int64_t items = s.batch * (packed ? s.headsKv : s.headsQ) *
                  ((rows + spec->bm - 1) / spec->bm);
  int64_t keyTiles = (s.seqlenK + spec->bn - 1) / spec->bn;
  return n == 1 || (n <= keyTiles && items * n <= kMaxBlocks);
}

static std::string pinnedSpec(const DecodeShape &s, const std::string &tile,
                              bool packed) {
  return std::string("family=") + (s.pageSize ? "fwd_paged" : "fwd_splitkv") +
         ",dtype=bf16,d=" + std::to_string(s.d) + "," + tile +
         (packed ? ",pack_gqa=1" : "") +
         (!s.pageSize && s.mixedMin > 0 ? ",varlen=1" : "");
}

llvm::Expected<DecodeGridRow> GpuDecodeBench::run(const DecodeShape &s) {
  State &st = *state;
  if (s.pageSize && (s.pageSize & (s.pageSize - 1)))
    return makeError(ErrorKind::Usage, "--page-size must be a power of two");
  if (kvTensorBytes(s) > st.k.size())
    return makeError(ErrorKind::Usage,
                     "the row's K/V does not fit the pools (--max-kv-mib)");
  int64_t poolPages =
      s.pageSize ? int64_t(st.k.size()) / (s.pageSize * s.headsKv * s.d * 2)
                 : 0;
  api::Problem problem = pagedDecodeProblem(s, api::Device::Cuda, poolPages);
  auto data = makeRowData(st, s, poolPages);
  if (!data)
    return data.takeError();
  DecodeGridRow row;
  row.shape = s;
  row.kvBytes = double(totalKeys(s) * s.headsKv * s.d * 2 * 2);
  row.movedBytes =
      row.kvBytes + double(s.batch * s.seqlenQ * s.headsQ * s.d * 2 * 2);
  std::vector<double> ref;

  // The reference: one query head per tile, one part, the arch's tile.
  api::Options refOptions;
  refOptions.kernel = pinnedSpec(s, "pipeline=mma", false);
  refOptions.numSplits = 1;
  api::Result<api::Plan> refPlan = api::plan(problem, refOptions);
  if (!refPlan.ok())
    return makeError(ErrorKind::Usage,
                     "reference plan: " + refPlan.status().toString());
  if (llvm::Error err = fitWorkspace(st, *data, *refPlan))
    return std::move(err);
  if (auto e = checkPlan(st, *refPlan, *data, ref); !e || *e != 0)
    return e ? makeError(ErrorKind::Driver, "the reference run wrote NaN")
             : e.takeError();

  api::Result<api::Plan> plan = api::plan(problem, {});
  if (!plan.ok())
    return makeError(ErrorKind::Usage,
                     "api::plan: " + plan.status().toString());
  row.planKernel = plan->steps().front().kernel;
  row.planSplits = unsigned(plan->steps().front().keySplits);
  if (llvm::Error err = fitWorkspace(st, *data, *plan))
    return std::move(err);
  auto planErr = checkPlan(st, *plan, *data, ref);
  auto planMs = planErr ? timePlan(st, *plan, *data) : planErr.takeError();
  if (!planMs)
    return planMs.takeError();
  row.planRelL2 = *planErr, row.planMsFirst = *planMs;

  for (const std::string &tile : st.options.tiles)
    for (bool packed : {false, true}) {
      if (packed && s.headsQ == s.headsKv)
        continue;
      for (unsigned n : st.options.splits) {
        if (!worthTiming(s, tile, packed, n))
          continue;
        api::Options o;
        o.kernel = pinnedSpec(s, tile, packed);
        o.numSplits = n;
        api::Result<api::Plan> pinned = api::plan(problem, o);
        if (!pinned.ok()) { // a tile this problem or target refuses
          if (st.refused.insert(o.kernel).second)
            llvm::errs() << "note: not timed: " << o.kernel << ": "
                         << pinned.status().toString() << "\n";
          break;
        }
        if (llvm::Error err = fitWorkspace(st, *data, *pinned))
          return std::move(err);
        auto e = checkPlan(st, *pinned, *data, ref);
        if (!e)
          return e.takeError();
        auto ms = timePlan(st, *pinned, *data);
        if (!ms)
          return ms.takeError();
        row.configs.push_back(
            {tile + (packed ? ",pack_gqa=1" : ""), n, *ms, *e});
      }
    }
  // The plan is timed first and last in its row, and its time is the
  // faster: timed first it follows the row's set-up (the reference, and
  // compiles), and read up to 40% slower than its pinned twin on a few 8-10
  // us rows (session 28), while the twins, timed later, did not. The
  // workspace only grew since the plan was fitted.
  auto planMsLast = timePlan(st, *plan, *data);
  if (!planMsLast)
    return planMsLast.takeError();
  row.planMsLast = *planMsLast;
  row.planMs = std::min(row.planMsFirst, row.planMsLast);
  return std::move(row);
}

double DecodeGridRow::bestMs() const {
  const GridConfigTiming *b = bestConfig();
  return b ? std::min(planMs, b->ms) : planMs;
}

const GridConfigTiming *DecodeGridRow::bestConfig() const {
  const GridConfigTiming *best = nullptr;
  for (const GridConfigTiming &c : configs)
    if (!best || c.ms < best->ms)
      best = &c;
  return best;
}

bool DecodeGridRow::outputsAgree() const {
  return planRelL2 <= 2e-2 &&
         llvm::all_of(configs, [](const auto &c) { return c.relL2 <= 2e-2; });
}
