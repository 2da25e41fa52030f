//===- PagedKv.cpp - Parameters of calls on a (paged) K/V cache -----------===//
#include "runtime/device/PagedKv.h"

using namespace fmhajit;

/// Strides of a cache block (page or sequence) of rows of headsKv * dim.
static TensorStrides cacheStrides(const KvCacheLayout &layout, int64_t headsKv,
                                  int64_t dim) {
  return {layout.blockStride(headsKv, dim), headsKv * dim, dim};
}

KernelArgs fmhajit::makePagedParams(const KernelSpec &spec,
                                    const PagedProblem &problem,
                                    const ForwardBuffers &query,
                                    const KvCacheBuffers &cache,
                                    unsigned numSplits,
                                    const SplitKvWorkspace &workspace) {
  KernelArgs p = makeKernelArgs(spec, problem.attention, query);
  const AttentionProblem &a = problem.attention;
  p.k = cache.k;
  p.v = cache.v;
  p.kStrides = cacheStrides(problem.cache, a.headsKv, spec.d);
  p.vStrides = cacheStrides(problem.cache, a.headsKv, spec.headDimV());
  p.blockTable = cache.blockTable;
  p.cacheSeqlens = cache.seqlens;
  p.maxPagesPerSeq = static_cast<int32_t>(problem.cache.maxPagesPerSeq);
  p.log2PageSize = static_cast<int32_t>(problem.cache.log2PageSize());
  p.numPages = static_cast<int32_t>(problem.cache.numPages);
  setSplits(p, numSplits, workspace);
  return p;
}

KernelArgs fmhajit::makeAppendKvParams(const KernelSpec &spec,
                                       const AppendKvProblem &problem,
                                       const AppendKvBuffers &buf) {
  KernelArgs p{};
  int64_t rows = problem.newTokens;
  auto dense = [&](int64_t heads, int64_t dim) -> TensorStrides {
    return {rows * heads * dim, heads * dim, dim};
  };
  p.q = buf.q;
  p.o = buf.qOut;
  p.qStrides = dense(problem.headsQ, spec.d);
  p.oStrides = dense(problem.headsQ, spec.d);
  p.k = buf.cache.k;
  p.v = buf.cache.v;
  p.kStrides = cacheStrides(problem.cache, problem.headsKv, spec.d);
  p.vStrides = cacheStrides(problem.cache, problem.headsKv, spec.headDimV());
  p.kNew = buf.kNew;
  p.vNew = buf.vNew;
  p.kNewStrides = dense(problem.headsKv, spec.d);
  p.vNewStrides = dense(problem.headsKv, spec.headDimV());
  p.blockTable = problem.cache.isPaged() ? buf.cache.blockTable : nullptr;
  p.cacheSeqlens = buf.cache.seqlens;
  p.maxPagesPerSeq = static_cast<int32_t>(problem.cache.maxPagesPerSeq);
  p.log2PageSize = problem.cache.isPaged()
                       ? static_cast<int32_t>(problem.cache.log2PageSize())
                       : 0;
  p.batch = static_cast<int32_t>(problem.batch);
  // Without Q to rotate, items past the K/V heads would have nothing to do.
  p.headsQ =
      static_cast<int32_t>(problem.rotateQ ? problem.headsQ : problem.headsKv);
  p.headsKv = static_cast<int32_t>(problem.headsKv);
  p.seqlenQ = static_cast<int32_t>(rows);
  p.numQTiles = static_cast<int32_t>((rows + spec.bm - 1) / spec.bm);
  p.rotaryDim = static_cast<int32_t>(problem.resolvedRotaryDim());
  p.rotaryInterleaved = problem.rotary == RotaryForm::Interleaved;
  p.rotaryCos = buf.rotaryCos;
  p.rotarySin = buf.rotarySin;
  if (!problem.rotateQ)
    p.q = p.o = nullptr;
  return p;
}
