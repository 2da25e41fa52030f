//===- GpuDecodeTable.cpp - The decode grid's table, JSON and peers -------===//
//
// One line per row: the problem, K/V MiB, the plan's choice and time, its
// bytes moved over time as a share of the device copy's bandwidth, the
// fastest configuration of the row and the plan's time over it, and
// PyTorch SDPA's best backend with fmhajit's speed against it. The copy
// bandwidth and PyTorch's times come from torch_decode.py, run in the same
// GPU call (bench/gpu/run.sh decode).
//
//===----------------------------------------------------------------------===//
#include "bench/decode/GpuDecodeGrid.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Keys.h"
#include "specs/SpecParser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;
using namespace fmhajit::bench;
namespace json = llvm::json;

const TorchPeers::Row *TorchPeers::find(const DecodeShape &s) const {
  for (const Row &r : rows)
    if (r.headsQ == s.headsQ && r.headsKv == s.headsKv && r.batch == s.batch &&
        r.seqlenK == s.seqlenK && r.seqlenQ == s.seqlenQ &&
        r.mixedMin == s.mixedMin)
      return &r;
  return nullptr;
}

llvm::Expected<TorchPeers>
fmhajit::bench::readTorchPeers(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(ErrorKind::Io, "cannot read '" + path.str() +
                                        "': " + buffer.getError().message());
  auto value = json::parse((*buffer)->getBuffer());
  if (!value)
    return makeError(ErrorKind::Io, "'" + path.str() + "' is not JSON: " +
                                        llvm::toString(value.takeError()));
  const json::Object *root = value->getAsObject();
  const json::Array *rows = root ? root->getArray("rows") : nullptr;
  if (!rows || !root->getNumber("copy_gbps"))
    return makeError(ErrorKind::Io, "'" + path.str() +
                                        "' has no copy_gbps or rows: write it "
                                        "with bench/decode/torch_decode.py");
  TorchPeers peers;
  peers.copyGbps = *root->getNumber("copy_gbps");
  peers.device = root->getString("device").value_or("").str();
  peers.version = root->getString("torch").value_or("").str();
  for (const json::Value &v : *rows) {
    const json::Object *r = v.getAsObject();
    if (!r || !r->getNumber("best_ms"))
      continue; // no backend ran it
    peers.rows.push_back({r->getInteger("heads_q").value_or(0),
                          r->getInteger("heads_kv").value_or(0),
                          r->getInteger("batch").value_or(0),
                          r->getInteger("seqlen_k").value_or(0),
                          *r->getNumber("best_ms"),
                          r->getString("best_backend").value_or("").str(),
                          r->getInteger("seqlen_q").value_or(1),
                          r->getInteger("mixed_min").value_or(0)});
  }
  return peers;
}

namespace {
/// "mma m16n64w1+pk n8": a pipeline, its tile, "+pk" under pack_gqa, parts.
std::string shortName(const KernelSpec &k, unsigned splits) {
  return keyOf(k.pipeline).str() + " m" + std::to_string(k.bm) + "n" +
         std::to_string(k.bn) + "w" + std::to_string(k.warps) +
         (k.stages > 1 ? "s" + std::to_string(k.stages) : "") +
         (k.pack_gqa ? "+pk" : "") + " n" + std::to_string(splits);
}

std::string shortTile(const std::string &spec, unsigned splits) {
  auto parsed = parseSpec("family=fwd_splitkv," + spec);
  if (!parsed)
    return llvm::toString(parsed.takeError()), spec;
  return shortName(*parsed, splits);
}

std::string planTile(const DecodeGridRow &r) {
  auto spec = decodeName(r.planKernel);
  if (!spec)
    return llvm::toString(spec.takeError()), r.planKernel;
  return shortName(*spec, r.planSplits);
}

double share(double bytes, double ms, double copyGbps) {
  return copyGbps > 0 ? bytes / (ms * 1e-3) / 1e9 / copyGbps : 0;
}
} // namespace

static json::Value rowJson(const DecodeGridRow &r, const TorchPeers *peers) {
  json::Array configs;
  for (const GridConfigTiming &c : r.configs)
    configs.push_back(json::Object{{"config", c.spec},
                                   {"num_splits", c.splits},
                                   {"ms", c.ms},
                                   {"rel_l2", c.relL2}});
  const TorchPeers::Row *t = peers ? peers->find(r.shape) : nullptr;
  const GridConfigTiming *best = r.bestConfig();
  double copy = peers ? peers->copyGbps : 0;
  return json::Object{
      {"heads_q", r.shape.headsQ},
      {"heads_kv", r.shape.headsKv},
      {"batch", r.shape.batch},
      {"seqlen_k", r.shape.seqlenK},
      {"seqlen_q", r.shape.seqlenQ},
      {"mixed_min", r.shape.mixedMin},
      {"page_size", r.shape.pageSize},
      {"kv_mib", r.kvBytes / (1 << 20)},
      {"plan_kernel", r.planKernel},
      {"plan_splits", r.planSplits},
      {"plan_ms", r.planMs},
      {"plan_ms_first", r.planMsFirst},
      {"plan_ms_last", r.planMsLast},
      {"plan_rel_l2", r.planRelL2},
      {"plan_share_of_copy", share(r.movedBytes, r.planMs, copy)},
      {"best_config", best ? best->spec : ""},
      {"best_splits", best ? best->splits : 0},
      {"best_ms", r.bestMs()},
      {"plan_vs_best", r.planOverBest()},
      {"torch_ms", t ? json::Value(t->ms) : json::Value(nullptr)},
      {"torch_backend", t ? t->backend : ""},
      {"torch_share_of_copy", t ? share(r.movedBytes, t->ms, copy) : 0},
      {"speed_vs_torch", t ? t->ms / r.planMs : 0},
      {"outputs_agree", r.outputsAgree()},
      {"configs", std::move(configs)}};
}

void fmhajit::bench::printGpuRow(llvm::raw_ostream &os, const DecodeGridRow &r,
                                 const TorchPeers *peers) {
  const TorchPeers::Row *t = peers ? peers->find(r.shape) : nullptr;
  const GridConfigTiming *best = r.bestConfig();
  double copy = peers ? peers->copyGbps : 0;
  std::string keys =
      (r.shape.mixedMin > 0 ? std::to_string(r.shape.mixedMin / 1024) + "-"
                            : std::string()) +
      std::to_string(r.shape.seqlenK / 1024) + "k ";
  std::string shape =
      std::to_string(r.shape.headsQ) + "/" + std::to_string(r.shape.headsKv) +
      " b" + std::to_string(r.shape.batch) + " " + keys +
      (r.shape.seqlenQ > 1 ? "q" + std::to_string(r.shape.seqlenQ) + " " : "") +
      (r.shape.pageSize ? "pg" + std::to_string(r.shape.pageSize)
                        : std::string("contig"));
  os << llvm::format("%-20s %6.0f  %-26s %7.3f %4.0f%%  %-26s %5.2f  ",
                     shape.c_str(), r.kvBytes / (1 << 20), planTile(r).c_str(),
                     r.planMs, 100 * share(r.movedBytes, r.planMs, copy),
                     best ? shortTile(best->spec, best->splits).c_str() : "-",
                     r.planOverBest());
  if (t)
    os << llvm::format("%7.3f %4.0f%% %5.2fx %s", t->ms,
                       100 * share(r.movedBytes, t->ms, copy), t->ms / r.planMs,
                       t->backend.c_str());
  else
    os << "      -";
  if (!r.outputsAgree())
    os << "  OUTPUT MISMATCH";
  os << "\n";
  os.flush();
}

void fmhajit::bench::printGpuHeader(llvm::raw_ostream &os,
                                    const TorchPeers *peers,
                                    llvm::StringRef device) {
  os << "decode on " << device
     << ": Sq=1 (qN: N query tokens), d=128, bf16, BSHD; ms per call;"
     << " copy = a 1 GiB copy, "
     << (peers ? llvm::formatv("{0:F0} GB/s", peers->copyGbps).str()
               : std::string("not measured (no --peers)"))
     << "\n"
     << llvm::format("%-20s %6s  %-26s %7s %5s  %-26s %5s  %7s %5s %6s\n",
                     "Hq/Hkv batch Sk kv", "KV MiB", "plan: tile n", "ms",
                     "copy", "best configuration", "p/bst", "torch", "copy",
                     "speed");
  os.flush();
}

llvm::Error fmhajit::bench::writeGpuGridJson(llvm::ArrayRef<DecodeGridRow> rows,
                                             const TorchPeers *peers,
                                             llvm::StringRef device,
                                             llvm::StringRef jsonPath) {
  json::Array list;
  for (const DecodeGridRow &r : rows)
    list.push_back(rowJson(r, peers));
  json::Object root{{"bench", "decode-gpu"},
                    {"device", device},
                    {"copy_gbps", peers ? peers->copyGbps : 0},
                    {"torch", peers ? peers->version : ""},
                    {"rows", std::move(list)}};
  std::error_code ec;
  llvm::raw_fd_ostream out(jsonPath, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return makeError(ErrorKind::Io,
                     "cannot write '" + jsonPath.str() + "': " + ec.message());
  out << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return llvm::Error::success();
}
