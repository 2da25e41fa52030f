//===- FamilyReference.h - float64 references of the multi-stage families -===//
//
// Each reference is built on referenceForward (Reference.h), so that every
// family is checked against the same definition of attention:
//  - paged attention gathers each sequence's pages into a packed varlen K/V
//    and runs the varlen reference (the mask, window and ALiBi rules then
//    see the sequence's own cache length, as the kernel does);
//  - split-KV needs no reference of its own: it must equal referenceForward;
//  - append_kv writes the rotated rows (rotateRowReference, in double) into
//    a copy of the cache; attention over the updated cache is then checked
//    against the reference of the family that reads it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/KvCache.h"
#include "runtime/numerics/Reference.h"
#include "runtime/numerics/Rotary.h"
#include "llvm/ADT/ArrayRef.h"
#include <vector>

namespace fmhajit {

/// The first \p lengths[b] rows of every sequence of a (paged or
/// contiguous) cache, packed: [sum of lengths, headsKv, dim].
std::vector<float> gatherCacheRows(llvm::ArrayRef<float> cache,
                                   const KvCacheLayout &layout,
                                   llvm::ArrayRef<int32_t> blockTable,
                                   llvm::ArrayRef<int64_t> lengths,
                                   int64_t headsKv, int64_t dim);

/// fwd_paged of \p problem (validated): O [batch, seqlenQ, headsQ, dv] and
/// LSE [batch, headsQ, seqlenQ]. \p kPool and \p vPool are the pools as
/// floats (already rounded to the spec's dtype).
ReferenceOutput
referencePaged(const KernelSpec &spec, const PagedProblem &problem,
               llvm::ArrayRef<float> q, llvm::ArrayRef<float> kPool,
               llvm::ArrayRef<float> vPool, llvm::ArrayRef<int32_t> blockTable,
               const ReferenceVariant &variant = {});

/// splitkv_combine of \p numSplits partials (layouts of ir/KernelAbi.h:
/// oAccum [numSplits, rows, dv], lseAccum [numSplits, rows], rows in the
/// LSE's order) into O (oShape()) and LSE (lseShape()) of \p problem.
ReferenceOutput referenceCombine(const AttentionProblem &problem,
                                 unsigned numSplits,
                                 llvm::ArrayRef<float> oAccum,
                                 llvm::ArrayRef<float> lseAccum);

/// What append_kv must leave behind.
struct AppendKvReference {
  std::vector<double> kCache, vCache; ///< the whole caches after the append
  std::vector<double> q;              ///< rotated Q, when problem.rotateQ
};

/// append_kv of \p problem (validated) on caches \p kCache / \p vCache
/// (floats, before the append): rows not appended keep their values.
AppendKvReference
referenceAppendKv(const AppendKvProblem &problem, const RotaryTables &tables,
                  llvm::ArrayRef<float> kCache, llvm::ArrayRef<float> vCache,
                  llvm::ArrayRef<int32_t> blockTable,
                  llvm::ArrayRef<float> kNew, llvm::ArrayRef<float> vNew,
                  llvm::ArrayRef<float> q);

} // namespace fmhajit
