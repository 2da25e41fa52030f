//===- RunAppendKv.cpp - fmhajit run for append_kv ------------------------===//
//
// Builds a cache (paged with --page-size, else contiguous) whose first
// --cache-len rows per sequence hold data and every other row NaN, appends
// --new-tokens seeded rows (rotated with --rotary), and checks the appended
// rows against referenceAppendKv and every other element for unchanged
// bits (AppendKvCompare.h). Timed calls rewrite the same rows.
//
//===----------------------------------------------------------------------===//
#include "runtime/AppendKvCompare.h"
#include "runtime/FamilyReference.h"
#include "runtime/HostExecutor.h"
#include "runtime/KvCacheData.h"
#include "runtime/PagedKv.h"
#include "runtime/RunBundle.h"
#include "specs/EncodedName.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/RunFamilies.h"
#include <cmath>

using namespace fmhajit;

namespace {
struct AppendData {
  HostTensor kNew, vNew, kCache, vCache, q, qOut;
  std::vector<int32_t> blockTable, seqlens;
  RotaryTables tables;

  AppendData(const RunOptions &opt, const AppendKvProblem &p)
      : kNew(opt.spec.dtype, numElements(p.newShape(p.d))),
        vNew(opt.spec.dtype, numElements(p.newShape(p.dv))),
        kCache(opt.spec.dtype, numElements(p.cache.shape(p.batch, p.headsKv, p.d))),
        vCache(opt.spec.dtype, numElements(p.cache.shape(p.batch, p.headsKv, p.dv))),
        q(opt.spec.dtype, p.rotateQ ? numElements(p.qShape()) : 0),
        qOut(opt.spec.outType(), p.rotateQ ? numElements(p.qShape()) : 0) {
    kNew.fillNormal(opt.seed);
    vNew.fillNormal(opt.seed + 1);
    q.fillNormal(opt.seed + 2);
    qOut.poison();
    if (p.cache.isPaged()) {
      std::vector<int64_t> after(p.cacheLens);
      for (int64_t &len : after)
        len += p.newTokens;
      blockTable = shuffledBlockTable(p.cache, after, opt.seed + 3);
    }
    fillCache(kCache, p.cache, blockTable, p.cacheLens, p.headsKv, p.d, opt.seed + 4);
    fillCache(vCache, p.cache, blockTable, p.cacheLens, p.headsKv, p.dv, opt.seed + 5);
    seqlens.assign(p.cacheLens.begin(), p.cacheLens.end());
    if (p.rotary != RotaryForm::None)
      tables = makeRotaryTables(p.rotaryPositions(), p.resolvedRotaryDim());
  }

  AppendKvBuffers buffers() {
    AppendKvBuffers b;
    b.kNew = kNew.data();
    b.vNew = vNew.data();
    b.cache = {kCache.data(), vCache.data(), blockTable.empty() ? nullptr : blockTable.data(),
               seqlens.data()};
    b.q = q.size() ? q.data() : nullptr;
    b.qOut = qOut.size() ? qOut.data() : nullptr;
    b.rotaryCos = tables.cos.empty() ? nullptr : tables.cos.data();
    b.rotarySin = tables.sin.empty() ? nullptr : tables.sin.data();
    return b;
  }
};

llvm::Error saveAppend(const RunOptions &opt, const AppendKvProblem &p, AppendData &data) {
  std::vector<float> kNew = data.kNew.toFloat(), vNew = data.vNew.toFloat(),
                     k = data.kCache.toFloat(), v = data.vCache.toFloat(),
                     q = data.q.toFloat(), qOut = data.qOut.toFloat();
  std::vector<BundleArray> arrays = {{"k_new.npy", kNew, p.newShape(p.d)},
                                     {"v_new.npy", vNew, p.newShape(p.dv)},
                                     {"k_cache.npy", k, p.cache.shape(p.batch, p.headsKv, p.d)},
                                     {"v_cache.npy", v, p.cache.shape(p.batch, p.headsKv, p.dv)}};
  if (p.rotateQ) {
    arrays.push_back({"q.npy", q, p.qShape()});
    arrays.push_back({"q_out.npy", qOut, p.qShape()});
  }
  int64_t half = data.tables.dim / 2;
  if (p.rotary != RotaryForm::None) {
    arrays.push_back({"rotary_cos.npy", data.tables.cos, {data.tables.positions, half}});
    arrays.push_back({"rotary_sin.npy", data.tables.sin, {data.tables.positions, half}});
  }
  auto meta = familyMetadata(opt);
  llvm::json::Array lens, table;
  for (int64_t len : p.cacheLens)
    lens.push_back(len);
  for (int64_t b = 0; p.cache.isPaged() && b < p.batch; ++b) {
    llvm::json::Array row;
    for (int64_t slot = 0; slot < p.cache.maxPagesPerSeq; ++slot)
      row.push_back(data.blockTable[b * p.cache.maxPagesPerSeq + slot]);
    table.push_back(std::move(row));
  }
  meta.emplace_back("new_tokens", p.newTokens);
  meta.emplace_back("cache_lens", std::move(lens));
  meta.emplace_back("page_size", p.cache.pageSize);
  meta.emplace_back("max_pages_per_seq", p.cache.maxPagesPerSeq);
  meta.emplace_back("block_table", std::move(table));
  meta.emplace_back("rotary", rotaryFormName(p.rotary));
  meta.emplace_back("rotary_dim", p.resolvedRotaryDim());
  meta.emplace_back("rotate_q", p.rotateQ);
  return writeBundle(*opt.saveDir, arrays, meta);
}
} // namespace

int fmhajit::runAppendKv(const RunOptions &opt, KernelCache &cache) {
  llvm::raw_ostream &os = llvm::outs();
  const AppendKvProblem &p = opt.family.append;
  auto kernel = HostKernel::load(opt.spec, cache);
  if (!kernel)
    return reportErrors(kernel.takeError());
  os << "kernel   " << encodeName(opt.spec) << " (" << originName(kernel->origin()) << ")\n"
     << "cache    "
     << (p.cache.isPaged() ? std::to_string(p.cache.numPages) + " pages of " +
                                 std::to_string(p.cache.pageSize) + " rows, shuffled"
                           : "contiguous, " + std::to_string(p.cache.capacity) + " rows")
     << "; rotary " << rotaryFormName(p.rotary) << (p.rotateQ ? " (K and Q)\n" : "\n");
  AppendData data(opt, p);
  std::vector<float> kBefore = data.kCache.toFloat(), vBefore = data.vCache.toFloat();
  KernelArgs params = makeAppendKvParams(opt.spec, p, data.buffers());
  HostExecutor executor(opt.threads);
  kernel->run(params, executor);
  bool pass = true;
  if (opt.check) {
    AppendKvReference ref = referenceAppendKv(p, data.tables, kBefore, vBefore, data.blockTable,
                                              data.kNew.toFloat(), data.vNew.toFloat(), data.q.toFloat());
    AppendKvCheck check = compareAppendKv(p, data.blockTable, ref, data.kCache.toFloat(),
                                          data.vCache.toFloat(), kBefore, vBefore,
                                          data.qOut.toFloat(), opt.spec.dtype, opt.spec.outType());
    os << "check    " << check.summary() << "\n";
    pass = check.pass;
  }
  if (opt.saveDir) {
    if (llvm::Error err = saveAppend(opt, p, data))
      return reportErrors(std::move(err));
    os << "saved    " << *opt.saveDir << "\n";
  }
  // Read the new rows, write the cache rows (and Q both ways when rotated).
  double bytes = 2.0 * (data.kNew.sizeInBytes() + data.vNew.sizeInBytes()) +
                 double(data.q.sizeInBytes() + data.qOut.sizeInBytes());
  printTiming(opt, [&] { kernel->run(params, executor); }, executor.threads(), 0, bytes, os);
  return pass ? 0 : 1;
}
