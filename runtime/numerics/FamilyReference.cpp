//===- FamilyReference.cpp - float64 references of the multi-stage families
//===//
#include "runtime/numerics/FamilyReference.h"
#include <algorithm>
#include <cassert>
#include <cmath>

using namespace fmhajit;

std::vector<float> fmhajit::gatherCacheRows(llvm::ArrayRef<float> cache,
                                            const KvCacheLayout &layout,
                                            llvm::ArrayRef<int32_t> blockTable,
                                            llvm::ArrayRef<int64_t> lengths,
                                            int64_t headsKv, int64_t dim) {
  std::vector<float> packed;
  int64_t rowElements = headsKv * dim;
  for (int64_t b = 0; b < static_cast<int64_t>(lengths.size()); ++b)
    for (int64_t j = 0; j < lengths[b]; ++j) {
      const float *row =
          &cache[layout.cacheRow(blockTable, b, j) * rowElements];
      packed.insert(packed.end(), row, row + rowElements);
    }
  return packed;
}

ReferenceOutput fmhajit::referencePaged(const KernelSpec &spec,
                                        const PagedProblem &problem,
                                        llvm::ArrayRef<float> q,
                                        llvm::ArrayRef<float> kPool,
                                        llvm::ArrayRef<float> vPool,
                                        llvm::ArrayRef<int32_t> blockTable,
                                        const ReferenceVariant &variant) {
  const AttentionProblem &dense = problem.attention;
  // The same call as varlen: every sequence seqlenQ queries, its own keys.
  KernelSpec varlenSpec = spec;
  varlenSpec.varlen = true;
  AttentionProblem varlen = dense;
  varlen.seqlensQ.assign(dense.batch, dense.seqlenQ);
  varlen.seqlensK = problem.cacheLens;
  std::vector<float> k =
      gatherCacheRows(kPool, problem.cache, blockTable, problem.cacheLens,
                      dense.headsKv, dense.d);
  std::vector<float> v =
      gatherCacheRows(vPool, problem.cache, blockTable, problem.cacheLens,
                      dense.headsKv, dense.dv);
  ReferenceOutput packed =
      referenceForward(varlenSpec, varlen, q, k, v, variant);
  // O [totalQ, Hq, dv] is already [batch, seqlenQ, Hq, dv]; LSE goes from
  // [Hq, batch * seqlenQ] to [batch, Hq, seqlenQ].
  ReferenceOutput out;
  out.o = std::move(packed.o);
  out.lse.resize(packed.lse.size());
  int64_t totalQ = dense.batch * dense.seqlenQ;
  for (int64_t b = 0; b < dense.batch; ++b)
    for (int64_t h = 0; h < dense.headsQ; ++h)
      for (int64_t i = 0; i < dense.seqlenQ; ++i)
        out.lse[(b * dense.headsQ + h) * dense.seqlenQ + i] =
            packed.lse[h * totalQ + b * dense.seqlenQ + i];
  return out;
}

ReferenceOutput fmhajit::referenceCombine(const AttentionProblem &p,
                                          unsigned numSplits,
                                          llvm::ArrayRef<float> oAccum,
                                          llvm::ArrayRef<float> lseAccum) {
  ReferenceOutput out;
  out.o.assign(numElements(p.oShape()), 0.0);
  out.lse.assign(numElements(p.lseShape()), 0.0);
  int64_t rows = static_cast<int64_t>(out.lse.size());
  std::vector<int32_t> cu = p.cuSeqlensQ();
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.headsQ; ++h)
      for (int64_t i = 0; i < p.seqlenQOf(b); ++i) {
        int64_t qRow = p.isVarlen() ? cu[b] + i : b * p.seqlenQ + i;
        int64_t row = p.isVarlen() ? h * p.totalQ() + qRow
                                   : (b * p.headsQ + h) * p.seqlenQ + i;
        double mx = -INFINITY;
        for (unsigned s = 0; s < numSplits; ++s)
          mx = std::max(mx, static_cast<double>(lseAccum[s * rows + row]));
        out.lse[row] = mx;
        if (mx == -INFINITY)
          continue; // o stays 0
        double sum = 0;
        for (unsigned s = 0; s < numSplits; ++s)
          sum += std::exp(lseAccum[s * rows + row] - mx);
        double lse = mx + std::log(sum);
        out.lse[row] = lse;
        double *o = &out.o[(qRow * p.headsQ + h) * p.dv];
        for (unsigned s = 0; s < numSplits; ++s) {
          double w = std::exp(lseAccum[s * rows + row] - lse);
          for (int64_t c = 0; c < p.dv; ++c)
            o[c] += w * oAccum[(s * rows + row) * p.dv + c];
        }
      }
  return out;
}

AppendKvReference fmhajit::referenceAppendKv(
    const AppendKvProblem &p, const RotaryTables &tables,
    llvm::ArrayRef<float> kCache, llvm::ArrayRef<float> vCache,
    llvm::ArrayRef<int32_t> blockTable, llvm::ArrayRef<float> kNew,
    llvm::ArrayRef<float> vNew, llvm::ArrayRef<float> q) {
  AppendKvReference ref;
  ref.kCache.assign(kCache.begin(), kCache.end());
  ref.vCache.assign(vCache.begin(), vCache.end());
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.newTokens; ++i) {
      int64_t pos = p.cacheLens[b] + i;
      int64_t row = p.cache.cacheRow(blockTable, b, pos);
      for (int64_t h = 0; h < p.headsKv; ++h) {
        int64_t from = (b * p.newTokens + i) * p.headsKv + h;
        std::vector<double> k = rotateRowReference(kNew.slice(from * p.d, p.d),
                                                   p.rotary, tables, pos);
        std::copy(k.begin(), k.end(),
                  ref.kCache.begin() + (row * p.headsKv + h) * p.d);
        for (int64_t c = 0; c < p.dv; ++c)
          ref.vCache[(row * p.headsKv + h) * p.dv + c] = vNew[from * p.dv + c];
      }
      if (!p.rotateQ)
        continue;
      for (int64_t h = 0; h < p.headsQ; ++h) {
        int64_t at = ((b * p.newTokens + i) * p.headsQ + h) * p.d;
        std::vector<double> y =
            rotateRowReference(q.slice(at, p.d), p.rotary, tables, pos);
        if (ref.q.empty())
          ref.q.resize(q.size());
        std::copy(y.begin(), y.end(), ref.q.begin() + at);
      }
    }
  return ref;
}
