//===- RunPaged.cpp - fmhajit run for fwd_paged ---------------------------===//
//
// Builds a paged cache the way the e2e tests do (KvCacheData.h: pages in a
// seeded random order, NaN in every row no sequence uses), runs fwd_paged
// with --num-splits parts (the combine too when more than one), and checks
// against referencePaged: the pages gathered, then the forward reference.
//
//===----------------------------------------------------------------------===//
#include "runtime/Compare.h"
#include "runtime/FamilyReference.h"
#include "runtime/HostExecutor.h"
#include "runtime/KvCacheData.h"
#include "runtime/PagedKv.h"
#include "runtime/RunBundle.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/RunFamilies.h"
#include <cmath>

using namespace fmhajit;

namespace {
/// Inputs, cache and poisoned outputs of one paged run.
struct PagedData {
  HostTensor q, kPool, vPool, o;
  std::vector<float> lse, slopes;
  std::vector<int32_t> blockTable, seqlens;

  PagedData(const RunOptions &opt, const PagedProblem &p)
      : q(opt.spec.dtype, numElements(p.attention.qShape())),
        kPool(opt.spec.dtype, numElements(p.cache.shape(p.attention.batch, p.attention.headsKv, p.attention.d))),
        vPool(opt.spec.dtype, numElements(p.cache.shape(p.attention.batch, p.attention.headsKv, p.attention.dv))),
        o(opt.spec.outType(), numElements(p.attention.oShape())) {
    const AttentionProblem &a = p.attention;
    q.fillNormal(opt.seed);
    blockTable = shuffledBlockTable(p.cache, p.cacheLens, opt.seed + 3);
    fillCache(kPool, p.cache, blockTable, p.cacheLens, a.headsKv, a.d, opt.seed + 1);
    fillCache(vPool, p.cache, blockTable, p.cacheLens, a.headsKv, a.dv, opt.seed + 2);
    seqlens.assign(p.cacheLens.begin(), p.cacheLens.end());
    o.poison();
    if (opt.spec.lse)
      lse.assign(numElements(a.lseShape()), NAN);
    if (opt.spec.bias == Bias::Alibi)
      slopes = a.resolvedAlibiSlopes();
  }

  ForwardBuffers query() {
    ForwardBuffers b{q.data(), nullptr, nullptr, o.data()};
    b.lse = lse.empty() ? nullptr : lse.data();
    b.alibiSlopes = slopes.empty() ? nullptr : slopes.data();
    return b;
  }
  KvCacheBuffers cache() {
    return {kPool.data(), vPool.data(), blockTable.data(), seqlens.data()};
  }
};

/// 2 (d + dv) per visible pair, as forwardFlops counts them.
double pagedFlops(const RunOptions &opt, const PagedProblem &p) {
  double pairs = 0;
  for (int64_t len : p.cacheLens)
    pairs += double(p.attention.seqlenQ) * len * (opt.spec.mask == Mask::None ? 1.0 : 0.5);
  return 2.0 * (opt.spec.d + opt.spec.headDimV()) * pairs * p.attention.headsQ;
}

llvm::Error savePaged(const RunOptions &opt, const PagedProblem &p, PagedData &data,
                      unsigned numSplits) {
  const AttentionProblem &a = p.attention;
  std::vector<float> q = data.q.toFloat(), k = data.kPool.toFloat(), v = data.vPool.toFloat(),
                     o = data.o.toFloat();
  std::vector<BundleArray> arrays = {{"q.npy", q, a.qShape()},
                                     {"k_pool.npy", k, p.cache.shape(a.batch, a.headsKv, a.d)},
                                     {"v_pool.npy", v, p.cache.shape(a.batch, a.headsKv, a.dv)},
                                     {"o.npy", o, a.oShape()}};
  if (opt.spec.lse)
    arrays.push_back({"lse.npy", data.lse, a.lseShape()});
  auto meta = familyMetadata(opt);
  llvm::json::Array lens, table;
  for (int64_t len : p.cacheLens)
    lens.push_back(len);
  for (int64_t b = 0; b < a.batch; ++b) {
    llvm::json::Array row;
    for (int64_t slot = 0; slot < p.cache.maxPagesPerSeq; ++slot)
      row.push_back(data.blockTable[b * p.cache.maxPagesPerSeq + slot]);
    table.push_back(std::move(row));
  }
  meta.emplace_back("seqlen_q", a.seqlenQ);
  meta.emplace_back("scale", static_cast<double>(a.resolvedScale()));
  meta.emplace_back("page_size", p.cache.pageSize);
  meta.emplace_back("num_pages", p.cache.numPages);
  meta.emplace_back("num_splits", int64_t(numSplits));
  meta.emplace_back("cache_lens", std::move(lens));
  meta.emplace_back("block_table", std::move(table));
  return writeBundle(*opt.saveDir, arrays, meta);
}
} // namespace

int fmhajit::runPaged(const RunOptions &opt, KernelCache &cache) {
  llvm::raw_ostream &os = llvm::outs();
  PagedProblem problem = PagedProblem::make(opt.spec, opt.problem, opt.family.cache, opt.family.cacheLens);
  auto kernels = loadSplitKv(opt.spec, cache, os);
  if (!kernels)
    return reportErrors(kernels.takeError());
  os << "cache    " << problem.cache.numPages << " pages of " << problem.cache.pageSize
     << " rows, shuffled\n";
  HostExecutor executor(opt.threads);
  unsigned n = resolveNumSplits(opt, problem.attention, executor.threads(), os);
  PagedData data(opt, problem);
  RunWorkspace workspace(splitKvWorkspaceSize(opt.spec, problem.attention, n));
  KernelArgs params = makePagedParams(opt.spec, problem, data.query(), data.cache(), n,
                                     workspace.pointers());
  kernels->run(params, executor);
  bool pass = true;
  if (opt.check) {
    ReferenceOutput ref = referencePaged(opt.spec, problem, data.q.toFloat(), data.kPool.toFloat(),
                                         data.vPool.toFloat(), data.blockTable);
    CompareResult r = compareOutputs(data.o.toFloat(), ref.o, data.lse,
                                     opt.spec.lse ? ref.lse : std::vector<double>(),
                                     opt.spec.outType());
    os << "check    " << r.summary() << "\n";
    pass = r.pass;
  }
  if (opt.saveDir) {
    if (llvm::Error err = savePaged(opt, problem, data, n))
      return reportErrors(std::move(err));
    os << "saved    " << *opt.saveDir << "\n";
  }
  printTiming(opt, [&] { kernels->run(params, executor); }, executor.threads(),
              pagedFlops(opt, problem), 0, os);
  return pass ? 0 : 1;
}
