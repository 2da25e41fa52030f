//===- RunBundle.h - What `fmhajit run --save DIR` writes -----------------===//
//
// A run bundle is enough for any other tool to recompute a run: the inputs
// and outputs as float32 .npy files in the packed layouts of
// AttentionProblem (q, k, v, o, lse when the spec has lse=1, the bias
// packed [batch, headsQ, seqlenQ, seqlenK] under bias=elementwise, and the
// variant's run-time tensors flat as variant_tensor<slot>.npy) and a
// meta.json with every run-time argument, resolved (the scale actually used,
// the ALiBi slopes actually used, cu_seqlens under varlen):
//
//   {"spec": "family=fwd,dtype=bf16,...", "name": "fmha_fwd_bf16_d128_...",
//    "dtype": "bf16", "mask": "window", "heads_q": 8, "heads_kv": 2,
//    "scale": 0.088388346, "softcap": 0, "window_left": 64,
//    "window_right": 0, "alibi_slopes": null, "sinks": null,
//    "cu_seqlens_q": [0, 5, 12],
//    "cu_seqlens_k": [0, 7, 20], "variant": null, "variant_tensors": null,
//    "dropout": {"p": 0.1, "seed": 42, "offset": 0}}
//
// variant_tensors lists the files of the variant's tensors in slot order
// (["variant_tensor0.npy"]), null where the run gave none.
//
// dropout is null without dropout=1; with it, p (the float the kernels got),
// the Philox seed and the offset, from which the keep-mask follows
// (Dropout.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include <string>
#include <utility>

namespace fmhajit {

/// One run's tensors as float, in the packed layouts of AttentionProblem.
struct RunTensors {
  llvm::ArrayRef<float> q, k, v, o;
  llvm::ArrayRef<float> lse; ///< empty when the spec has no lse
};

/// One float32 array of a bundle.
struct BundleArray {
  llvm::StringRef file; ///< e.g. "k_cache.npy"
  llvm::ArrayRef<float> data;
  llvm::SmallVector<int64_t, 4> shape;
};

/// The bundles of the multi-stage families (docs/families.md): creates
/// \p dir, writes each array as .npy and meta.json with \p meta's keys in
/// the order given. Failures are ErrorKind::Io errors naming the path.
llvm::Error
writeBundle(llvm::StringRef dir, llvm::ArrayRef<BundleArray> arrays,
            llvm::ArrayRef<std::pair<std::string, llvm::json::Value>> meta);

/// The bundle's file of the variant tensor in \p slot:
/// "variant_tensor<slot>.npy".
llvm::StringRef variantTensorFile(size_t slot);

/// meta.json's object for \p spec (resolved) and \p problem (validated).
llvm::json::Object runMetadata(const KernelSpec &spec,
                               const AttentionProblem &problem);

/// Creates \p dir if needed and writes q.npy, k.npy, v.npy, o.npy, lse.npy
/// (when spec.lse) and meta.json into it. Failures are ErrorKind::Io errors
/// naming the path.
llvm::Error writeRunBundle(llvm::StringRef dir, const KernelSpec &spec,
                           const AttentionProblem &problem,
                           const RunTensors &tensors);

} // namespace fmhajit
