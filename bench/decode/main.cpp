//===- main.cpp - fmhajit-bench-decode: split-KV against single-pass ------===//
//
// Decode on the host: Sq = 1, Sk from 1k to 128k, GQA 8:1, d = 128, bf16.
// Every row times the single-pass kernel and split-KV at several part
// counts on the same inputs and threads, then says whether chooseNumSplits'
// choice (SplitHeuristic.h) is the faster of split-KV and single-pass, or
// within 5% of the other (against the best split count when the rule does
// not split), and how far it is from the best count. It prints a table and
// writes JSON (docs/bench.md); it never fails on speed, only when a split
// run's output disagrees with the single-pass one.
//
//===----------------------------------------------------------------------===//
#include "bench/decode/DecodeRunner.h"
#include "specs/Errors.h"
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
static llvm::cl::opt<std::string> jsonPath("json", llvm::cl::desc("where to write the JSON"),
                                           llvm::cl::init("bench-decode.json"),
                                           llvm::cl::cat(category));
static llvm::cl::opt<bool> quick("quick", llvm::cl::desc("two short rows, for smoke tests"),
                                 llvm::cl::cat(category));
static llvm::cl::opt<unsigned> threads("num-threads", llvm::cl::desc("worker threads (0: all)"),
                                       llvm::cl::init(0), llvm::cl::cat(category));
static llvm::cl::opt<unsigned> headsQ("heads-q", llvm::cl::desc("query heads"), llvm::cl::init(8),
                                      llvm::cl::cat(category));
static llvm::cl::opt<unsigned> headsKv("heads-kv", llvm::cl::desc("K/V heads (8:1 by default)"),
                                       llvm::cl::init(1), llvm::cl::cat(category));
static llvm::cl::opt<unsigned> batch("num-seqs", llvm::cl::desc("sequences"), llvm::cl::init(1),
                                     llvm::cl::cat(category));

static void printHeader(llvm::raw_ostream &os, const DecodeResult &first) {
  os << "decode: Sq=1, d=" << first.shape.d << ", bf16, batch " << first.shape.batch << ", Hq="
     << first.shape.headsQ << ", Hkv=" << first.shape.headsKv << ", " << first.threads
     << " threads; best-of-runs ms\n"
     << llvm::format("%8s %9s", "Sk", "single");
  for (const SplitTiming &s : first.splits)
    os << llvm::format(" %9s", ("n=" + std::to_string(s.numSplits)).c_str());
  os << llvm::format("  %4s %9s %4s %9s %9s %9s\n", "rule", "rule ms", "best", "single/r",
                     "rule/best", "choice ok");
}

static void printRow(llvm::raw_ostream &os, const DecodeResult &r) {
  os << llvm::format("%8lld %9.3f", (long long)r.shape.seqlenK, r.single.bestSeconds * 1e3);
  for (const SplitTiming &s : r.splits)
    os << llvm::format(" %9.3f", s.timing.bestSeconds * 1e3);
  os << llvm::format("  %4u %9.3f %4u %8.2fx %8.2fx %9s", r.ruleSplits, r.ruleSeconds() * 1e3,
                     r.bestSplits(), r.single.bestSeconds / r.ruleSeconds(),
                     r.ruleSeconds() / r.bestSeconds(), r.choiceWithin5Percent() ? "yes" : "NO");
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
  return llvm::json::Object{{"seqlen_k", r.shape.seqlenK},
                            {"single_ms", r.single.bestSeconds * 1e3},
                            {"splits", std::move(splits)},
                            {"rule_splits", r.ruleSplits},
                            {"rule_ms", r.ruleSeconds() * 1e3},
                            {"best_splits", r.bestSplits()},
                            {"best_ms", r.bestSeconds() * 1e3},
                            {"rule_vs_best", r.ruleSeconds() / r.bestSeconds()},
                            {"single_vs_rule", r.single.bestSeconds / r.ruleSeconds()},
                            {"best_split_ms", r.bestSplitSeconds() * 1e3},
                            {"choice_within_5_percent", r.choiceWithin5Percent()},
                            {"outputs_agree", r.outputsAgree()}};
}

static llvm::Error writeJson(const std::vector<DecodeResult> &rows) {
  llvm::json::Array list;
  bool allOk = true;
  for (const DecodeResult &r : rows) {
    list.push_back(rowJson(r));
    allOk = allOk && r.choiceWithin5Percent();
  }
  const DecodeShape &s = rows.front().shape;
  llvm::json::Object root{{"bench", "decode"},
                          {"dtype", "bf16"},
                          {"d", s.d},
                          {"batch", s.batch},
                          {"heads_q", s.headsQ},
                          {"heads_kv", s.headsKv},
                          {"threads", rows.front().threads},
                          {"split_spec", decodeSpecText("fwd_splitkv", s.d)},
                          {"single_spec", decodeSpecText("fwd", s.d)},
                          {"rows", std::move(list)},
                          {"choice_ok_on_every_row", allOk}};
  std::error_code ec;
  llvm::raw_fd_ostream os(jsonPath, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return makeError(ErrorKind::Io, "cannot write '" + jsonPath + "': " + ec.message());
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(argc, argv, "fmhajit host decode benchmark\n");
  auto cache = KernelCache::global();
  if (!cache) {
    llvm::errs() << "error: " << llvm::toString(cache.takeError()) << "\n";
    return 1;
  }
  HostExecutor executor(threads);
  std::vector<int64_t> lengths = {1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
  std::vector<unsigned> candidates = {2, 4, 8, 16, 32};
  if (quick) {
    lengths = {1024, 4096};
    candidates = {2, 4};
  }
  // Calls of a millisecond or two on a thread pool jitter by tens of
  // percent: many runs per count, so that the best run is steady.
  TimingPolicy policy;
  policy.budgetSeconds = quick ? 0.2 : 0.6;
  policy.minRuns = quick ? 3 : 15;
  policy.maxRuns = quick ? 9 : 400;
  std::vector<DecodeResult> rows;
  bool agree = true;
  for (int64_t sk : lengths) {
    DecodeShape shape{int64_t(batch), int64_t(headsQ), int64_t(headsKv), sk, 128};
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
  llvm::outs() << "json     " << jsonPath << "\n";
  return agree ? 0 : 1;
}
