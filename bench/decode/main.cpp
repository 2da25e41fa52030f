//===- main.cpp - fmhajit-bench-decode: is the dispatcher's choice fastest?
//-===//
//
// Decode on the host: Sq = 1, Sk from 1k to 128k, GQA 8:1, d = 128, bf16.
// With --device cuda it runs the grid of issue 13 instead (GpuDecodeGrid.h):
// Hq/Hkv x batch x Sk x contiguous/paged, the plan against every
// configuration it could have picked, bandwidth and PyTorch from --peers.
// Every host row times the single-pass kernel, split-KV at several part counts
// and the plan api::plan() makes for the problem (run through api::run),
// on the same inputs and threads, then says whether the plan's choice is
// the fastest of the row or within 5% of it: PASS or MISS per row, and
// overall. It prints a table and writes JSON (docs/bench.md); it never
// fails on speed (a noisy machine would make it flaky), only when a run's
// output disagrees with the single-pass one.
//
//===----------------------------------------------------------------------===//
#include "bench/decode/DecodeRunner.h"
#include "bench/decode/GpuDecodeGrid.h"
#include "runtime/api/HostForwardStep.h"
#include "specs/Errors.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;
using namespace fmhajit::bench;

static llvm::cl::OptionCategory category("fmhajit-bench-decode options");
static llvm::cl::opt<std::string>
    jsonPath("json", llvm::cl::desc("where to write the JSON"),
             llvm::cl::init("bench-decode.json"), llvm::cl::cat(category));
static llvm::cl::opt<bool>
    quick("quick", llvm::cl::desc("two short rows, for smoke tests"),
          llvm::cl::cat(category));
static llvm::cl::opt<unsigned>
    threads("num-threads", llvm::cl::desc("worker threads (0: all)"),
            llvm::cl::init(0), llvm::cl::cat(category));
static llvm::cl::opt<unsigned> headsQ("heads-q", llvm::cl::desc("query heads"),
                                      llvm::cl::init(8),
                                      llvm::cl::cat(category));
static llvm::cl::opt<unsigned>
    headsKv("heads-kv", llvm::cl::desc("K/V heads (8:1 by default)"),
            llvm::cl::init(1), llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    device("device", llvm::cl::desc("host, or cuda for the NVIDIA GPU"),
           llvm::cl::init("host"), llvm::cl::cat(category));
static llvm::cl::opt<unsigned> batch("num-seqs", llvm::cl::desc("sequences"),
                                     llvm::cl::init(1),
                                     llvm::cl::cat(category));

// The GPU grid (--device cuda).
static llvm::cl::opt<std::string>
    gridHeads("heads", llvm::cl::desc("GPU grid: Hq/Hkv pairs"),
              llvm::cl::init("32/8,64/8,8/1"), llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    gridBatches("batches", llvm::cl::desc("GPU grid: batch sizes"),
                llvm::cl::init("1,8,64"), llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    gridLengths("lengths", llvm::cl::desc("GPU grid: cache lengths"),
                llvm::cl::init("1024,4096,8192,32768,131072"),
                llvm::cl::cat(category));
static llvm::cl::opt<std::string> gridQueries(
    "seqlens-q",
    llvm::cl::desc("GPU grid: query tokens per sequence (2-8: speculative)"),
    llvm::cl::init("1"), llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    gridPages("page-sizes",
              llvm::cl::desc("GPU grid: 0 (contiguous) and page sizes"),
              llvm::cl::init("0,16"), llvm::cl::cat(category));
static llvm::cl::opt<bool> pagesInOrder(
    "pages-in-order",
    llvm::cl::desc("GPU grid: paged rows read consecutive pages of the pool "
                   "instead of a shuffled draw"),
    llvm::cl::cat(category));
static llvm::cl::opt<std::string> gridMixed(
    "mixed",
    llvm::cl::desc("GPU grid: rows of mixed lengths, BATCH:MIN-MAX,... "
                   "(e.g. 64:1024-32768: 64 sequences, keys drawn from "
                   "1k-32k), for each --heads and --page-sizes"),
    llvm::cl::init(""), llvm::cl::cat(category));
static llvm::cl::opt<bool>
    mixedOnly("mixed-only", llvm::cl::desc("GPU grid: only the --mixed rows"),
              llvm::cl::cat(category));
static llvm::cl::opt<unsigned>
    maxKvMib("max-kv-mib",
             llvm::cl::desc("GPU grid: skip rows with more K/V than this"),
             llvm::cl::init(1024), llvm::cl::cat(category));
static llvm::cl::opt<std::string> gridTiles(
    "tiles",
    llvm::cl::desc("GPU grid: ';'-separated tiles each tried packed and not"),
    llvm::cl::init("pipeline=mma,bm=16,bn=64,warps=1;"
                   "pipeline=mma,bm=16,bn=128,warps=1;"
                   "pipeline=mma,bm=64,bn=64,warps=4"),
    llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    gridSplits("splits", llvm::cl::desc("GPU grid: part counts to try"),
               llvm::cl::init("1,2,4,8,16,32,64"), llvm::cl::cat(category));
static llvm::cl::opt<unsigned> reps("reps",
                                    llvm::cl::desc("GPU grid: timed runs"),
                                    llvm::cl::init(10),
                                    llvm::cl::cat(category));
static llvm::cl::opt<unsigned>
    warmUpMs("warmup-ms",
             llvm::cl::desc("GPU grid: untimed runs before each contender, ms"),
             llvm::cl::init(2), llvm::cl::cat(category));
static llvm::cl::opt<std::string>
    peersPath("peers",
              llvm::cl::desc("GPU grid: torch_decode.py's JSON (copy "
                             "bandwidth, PyTorch SDPA)"),
              llvm::cl::cat(category));

/// "1,8,64" as numbers; a clear error for anything else.
static llvm::Expected<std::vector<int64_t>> numbers(llvm::StringRef flag,
                                                    llvm::StringRef text) {
  std::vector<int64_t> out;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int64_t n;
    if (p.trim().getAsInteger(10, n) || n < 0)
      return makeError(ErrorKind::Usage, "--" + flag.str() + " '" + text.str() +
                                             "': use comma-separated counts");
    out.push_back(n);
  }
  if (out.empty())
    return makeError(ErrorKind::Usage, "--" + flag.str() + " is empty");
  return out;
}

/// --mixed's BATCH:MIN-MAX items as shapes of \p heads (batch, seqlenK =
/// MAX, mixedMin = MIN).
static llvm::Expected<std::vector<DecodeShape>> mixedShapes() {
  std::vector<DecodeShape> out;
  llvm::SmallVector<llvm::StringRef> items;
  llvm::StringRef(gridMixed).split(items, ',', -1, false);
  for (llvm::StringRef item : items) {
    auto [b, range] = item.split(':');
    auto [lo, hi] = range.split('-');
    DecodeShape s;
    if (b.trim().getAsInteger(10, s.batch) ||
        lo.trim().getAsInteger(10, s.mixedMin) ||
        hi.trim().getAsInteger(10, s.seqlenK) || s.batch < 2 ||
        s.mixedMin < 1 || s.seqlenK < s.mixedMin)
      return makeError(ErrorKind::Usage,
                       "--mixed '" + item.str() +
                           "': use BATCH:MIN-MAX with BATCH >= 2 and "
                           "1 <= MIN <= MAX, e.g. 64:1024-32768");
    out.push_back(s);
  }
  return out;
}

/// The grid's shapes, rows over --max-kv-mib left out.
static llvm::Expected<std::vector<DecodeShape>> gridShapes() {
  auto batches = numbers("batches", gridBatches);
  auto lengths = numbers("lengths", gridLengths);
  auto pages = numbers("page-sizes", gridPages);
  auto queries = numbers("seqlens-q", gridQueries);
  auto mixed = mixedShapes();
  if (!batches || !lengths || !pages || !queries || !mixed)
    return llvm::joinErrors(
        llvm::joinErrors(
            llvm::joinErrors(batches.takeError(), lengths.takeError()),
            llvm::joinErrors(pages.takeError(), queries.takeError())),
        mixed.takeError());
  llvm::SmallVector<llvm::StringRef> heads;
  llvm::StringRef(gridHeads).split(heads, ',', -1, false);
  std::vector<DecodeShape> shapes;
  for (llvm::StringRef h : heads) {
    auto [q, kv] = h.split('/');
    int64_t hq, hkv;
    if (q.getAsInteger(10, hq) || kv.getAsInteger(10, hkv) || hkv < 1 ||
        hq % hkv)
      return makeError(ErrorKind::Usage,
                       "--heads '" + h.str() +
                           "': use Hq/Hkv pairs with Hkv dividing Hq, e.g. "
                           "32/8,8/1");
    for (int64_t sq : *queries)
      for (int64_t page : *pages) {
        for (int64_t b : mixedOnly ? std::vector<int64_t>{} : *batches)
          for (int64_t sk : *lengths) {
            DecodeShape s{b, hq, hkv, sk, 128, page, std::max<int64_t>(sq, 1)};
            if (2 * b * sk * hkv * s.d * 2 <= int64_t(maxKvMib) << 20)
              shapes.push_back(s);
          }
        for (DecodeShape s : *mixed) {
          s.headsQ = hq, s.headsKv = hkv, s.pageSize = page;
          s.seqlenQ = std::max<int64_t>(sq, 1);
          if (2 * totalKeys(s) * hkv * s.d * 2 <= int64_t(maxKvMib) << 20)
            shapes.push_back(s);
        }
      }
  }
  return shapes;
}

static llvm::cl::opt<bool>
    hostGrid("grid",
             llvm::cl::desc("on the host, run the GPU grid's rows (the plan "
                            "only) instead of the split table"),
             llvm::cl::cat(category));

/// The grid on the GPU, or with --grid on the host's threads.
static int runGrid(bool gpu) {
  auto shapes = gridShapes();
  auto splits = numbers("splits", gridSplits);
  if (!shapes || !splits) {
    llvm::errs() << "error: "
                 << llvm::toString(llvm::joinErrors(shapes.takeError(),
                                                    splits.takeError()))
                 << "\n";
    return 2;
  }
  std::optional<TorchPeers> peers;
  if (!peersPath.empty()) {
    auto read = readTorchPeers(peersPath);
    if (!read) {
      llvm::errs() << "error: " << llvm::toString(read.takeError()) << "\n";
      return 2;
    }
    peers = std::move(*read);
  }
  GpuGridOptions options;
  llvm::SmallVector<llvm::StringRef> tiles;
  llvm::StringRef(gridTiles).split(tiles, ';', -1, false);
  for (llvm::StringRef t : tiles)
    options.tiles.push_back(t.str());
  for (int64_t n : *splits)
    options.splits.push_back(unsigned(std::max<int64_t>(n, 1)));
  options.reps = std::max(1u, unsigned(reps));
  options.warmUpMs = warmUpMs;
  options.poolBytes = size_t(maxKvMib) << 19; // half each for K and V
  options.pagesInOrder = pagesInOrder;
  std::unique_ptr<GpuDecodeBench> gpuBench;
  std::unique_ptr<HostDecodeBench> hostBench;
  std::string where;
  if (gpu) {
    auto bench = GpuDecodeBench::create(options);
    if (!bench) {
      llvm::errs() << "error: " << llvm::toString(bench.takeError()) << "\n";
      return 1;
    }
    gpuBench = std::move(*bench);
    where =
        gpuBench->describe() + " (CUDA events, calls back to back" +
        (pagesInOrder ? "; paged rows read their pages in pool order)" : ")");
  } else {
    hostBench = HostDecodeBench::create(options, threads);
    where = "the host, " +
            std::to_string(sharedHostExecutor(threads)->threads()) +
            " threads (wall clock, median call)";
  }
  const TorchPeers *torch = peers ? &*peers : nullptr;
  printGpuHeader(llvm::outs(), torch, where);
  std::vector<DecodeGridRow> rows;
  for (const DecodeShape &s : *shapes) {
    auto row = gpu ? gpuBench->run(s) : hostBench->run(s);
    if (!row) {
      llvm::errs() << "error: " << llvm::toString(row.takeError()) << "\n";
      return 1;
    }
    printGpuRow(llvm::outs(), *row, torch);
    rows.push_back(std::move(*row));
  }
  if (llvm::Error err = writeGpuGridJson(rows, torch, where, jsonPath)) {
    llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  bool agree = llvm::all_of(
      rows, [](const DecodeGridRow &r) { return r.outputsAgree(); });
  return agree ? 0 : 1;
}

static void printHeader(llvm::raw_ostream &os, const DecodeResult &first) {
  os << "decode: Sq=1, d=" << first.shape.d << ", bf16, batch "
     << first.shape.batch << ", Hq=" << first.shape.headsQ
     << ", Hkv=" << first.shape.headsKv << ", " << first.threads
     << (device == "cuda" ? " SMs" : " threads")
     << "; best-of-runs ms; plan = what api::plan() runs\n"
     << llvm::format("%8s %9s", "Sk", "single");
  for (const SplitTiming &s : first.splits)
    os << llvm::format(" %9s", ("n=" + std::to_string(s.numSplits)).c_str());
  os << llvm::format("  %6s %9s %4s %9s %9s %6s\n", "plan n", "plan ms", "best",
                     "single/p", "plan/best", "choice");
}

static void printRow(llvm::raw_ostream &os, const DecodeResult &r) {
  os << llvm::format("%8lld %9.3f", (long long)r.shape.seqlenK,
                     r.single.bestSeconds * 1e3);
  for (const SplitTiming &s : r.splits)
    os << llvm::format(" %9.3f", s.timing.bestSeconds * 1e3);
  os << llvm::format("  %6u %9.3f %4u %8.2fx %8.2fx %6s", r.planSplits,
                     r.plan.bestSeconds * 1e3, r.bestSplits(),
                     r.single.bestSeconds / r.plan.bestSeconds,
                     r.plan.bestSeconds / r.bestSeconds(),
                     r.planWithin5Percent() ? "PASS" : "MISS");
  if (!r.outputsAgree())
    os << "  OUTPUT MISMATCH";
  os << "\n";
  os.flush();
}

static llvm::json::Value rowJson(const DecodeResult &r) {
  llvm::json::Array splits;
  for (const SplitTiming &s : r.splits)
    splits.push_back(llvm::json::Object{{"num_splits", s.numSplits},
                                        {"ms", s.timing.bestSeconds * 1e3},
                                        {"runs", s.timing.runs},
                                        {"rel_l2_vs_single", s.relL2}});
  return llvm::json::Object{
      {"seqlen_k", r.shape.seqlenK},
      {"single_ms", r.single.bestSeconds * 1e3},
      {"splits", std::move(splits)},
      {"plan_splits", r.planSplits},
      {"plan_kernel", r.planKernel},
      {"plan_ms", r.plan.bestSeconds * 1e3},
      {"plan_runs", r.plan.runs},
      {"plan_rel_l2_vs_single", r.planRelL2},
      {"best_splits", r.bestSplits()},
      {"best_ms", r.bestSeconds() * 1e3},
      {"plan_vs_best", r.plan.bestSeconds / r.bestSeconds()},
      {"single_vs_plan", r.single.bestSeconds / r.plan.bestSeconds},
      {"plan_within_5_percent", r.planWithin5Percent()},
      {"outputs_agree", r.outputsAgree()}};
}

static llvm::Error writeJson(const std::vector<DecodeResult> &rows) {
  llvm::json::Array list;
  bool allOk = true;
  for (const DecodeResult &r : rows) {
    list.push_back(rowJson(r));
    allOk = allOk && r.planWithin5Percent();
  }
  const DecodeShape &s = rows.front().shape;
  llvm::json::Object root{{"bench", "decode"},
                          {"dtype", "bf16"},
                          {"d", s.d},
                          {"batch", s.batch},
                          {"heads_q", s.headsQ},
                          {"heads_kv", s.headsKv},
                          {"device", device.getValue()},
                          {"threads", rows.front().threads},
                          {"split_spec", decodeSpecText("fwd_splitkv", s.d)},
                          {"single_spec", decodeSpecText("fwd", s.d)},
                          {"rows", std::move(list)},
                          {"plan_within_5_percent_on_every_row", allOk}};
  std::error_code ec;
  llvm::raw_fd_ostream os(jsonPath, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return makeError(ErrorKind::Io,
                     "cannot write '" + jsonPath + "': " + ec.message());
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "fmhajit host decode benchmark\n");
  auto cache = KernelCache::global();
  if (!cache) {
    llvm::errs() << "error: " << llvm::toString(cache.takeError()) << "\n";
    return 1;
  }
  // The pool api::run uses for this thread count, so that the plan and the
  // direct runs share it: each contender would otherwise wake a pool that
  // slept while the others ran, which is the pool's cost, not the choice's.
  if (device != "host" && device != "cuda") {
    llvm::errs() << "error: --device " << device << ": use host or cuda\n";
    return 2;
  }
  if (device == "cuda" || hostGrid)
    return runGrid(device == "cuda");
  HostExecutor &executor = *sharedHostExecutor(threads);
  std::vector<int64_t> lengths = {1024,  2048,  4096,  8192,
                                  16384, 32768, 65536, 131072};
  std::vector<unsigned> candidates = {2, 4, 8, 16, 32, 64}; // up to kMaxSplits
  if (quick) {
    lengths = {1024, 4096};
    candidates = {2, 4};
  }
  // Calls of a millisecond or two on a thread pool jitter by tens of
  // percent: many rounds per row, each running every contender once, so
  // that the best run of each is steady and drift falls on all alike.
  TimingPolicy policy;
  policy.budgetSeconds = quick ? 0.5 : 4.0;
  policy.minRuns = quick ? 3 : 15;
  policy.maxRuns = quick ? 9 : 400;
  std::vector<DecodeResult> rows;
  bool agree = true;
  for (int64_t sk : lengths) {
    DecodeShape shape{int64_t(batch), int64_t(headsQ), int64_t(headsKv), sk,
                      128};
    auto row = runDecodeRow(shape, candidates, executor, *cache, policy);
    if (!row) {
      llvm::errs() << "error: " << llvm::toString(row.takeError()) << "\n";
      return 1;
    }
    if (rows.empty())
      printHeader(llvm::outs(), *row);
    printRow(llvm::outs(), *row);
    agree = agree && row->outputsAgree();
    rows.push_back(std::move(*row));
  }
  if (llvm::Error err = writeJson(rows)) {
    llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  size_t passed = llvm::count_if(
      rows, [](const DecodeResult &r) { return r.planWithin5Percent(); });
  llvm::outs() << "overall  " << (passed == rows.size() ? "PASS" : "MISS")
               << ": the plan's choice is "
               << "the fastest or within 5% of it on " << passed << " of "
               << rows.size() << " rows\n"
               << "json     " << jsonPath << "\n";
  return agree ? 0 : 1;
}
