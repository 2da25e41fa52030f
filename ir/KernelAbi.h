//===- KernelAbi.h - The arguments every kernel takes ---------------------===//
//
// Every kernel (forward, split-KV, paged, combine, append_kv) takes one
// KernelArgs by pointer (host) or by value (GPU kernel parameter / kernarg
// segment); each family reads the fields it needs (docs/families.md). Its
// fields are declared once, in KernelArgs.def: this plain struct and the
// matching llvm::StructType ir/ builds are both generated from there, and a
// test checks that both agree on every offset.
//
// Tensors are addressed with element strides, so any layout (BSHD, BHSD,
// packed varlen) works. Under varlen, sequence b's rows are rows
// cu_seqlens[b] .. cu_seqlens[b+1]-1 of a packed [total, heads, d] tensor and
// the batch strides are unused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/ArchTable.h"
#include "specs/KernelSpec.h"
#include <cstdint>
#include <string>
#include <type_traits>

namespace fmhajit {

struct TensorStrides {
  int64_t batch; ///< elements between batches (unused under varlen)
  int64_t row;   ///< elements between sequence positions
  int64_t head;  ///< elements between heads
};

/// One run-time tensor a variant reads with fmhajit_tensor(slot, index)
/// (docs/variants.md): \p length float32 elements, read flat. The run
/// refuses a slot the variant reads with length < 1, so the kernel's
/// clamped read always lands inside the tensor (ir/Variant.h).
struct VariantTensor {
  const float *data;
  int64_t length;
};

/// The slots fmhajit_tensor may name: 0 to kMaxVariantTensors - 1.
inline constexpr unsigned kMaxVariantTensors = 4;

/// KernelArgs::variantTensors: slot s is what fmhajit_tensor(s, i) reads.
/// Inline in the arguments (not behind a pointer), so the kernel reads a
/// slot's data and length as it reads any other field.
struct VariantTensors {
  VariantTensor slot[kMaxVariantTensors];
};

/// The arguments of every kernel, one field per line of KernelArgs.def.
struct KernelArgs {
#define KERNEL_ARG(Name, Index, Type, Doc) Type Name;
#include "ir/KernelArgs.def"
};

/// A kernel that loads by TMA (specs/pipelines/WgmmaLayout.h:
/// usesTensorMaps) takes a second parameter, grid-constant: one CUtensorMap
/// (128 opaque bytes, 64-byte aligned) per tensor it loads, in this order.
enum TensorMapIndex : unsigned { kQMap, kKMap, kVMap, kNumTensorMaps };
struct alignas(64) TensorMaps {
  uint64_t map[kNumTensorMaps][16];
};

/// KernelArgs' field indices, in layout order: kQ, kK, ..., kRotaryInterleaved.
enum KernelArgsField : unsigned {
#define KERNEL_ARG(Name, Index, Type, Doc) k##Index,
#include "ir/KernelArgs.def"
  kNumKernelArgsFields
};

/// How ir/ lays a field out: a pointer, a TensorStrides (three int64s), an
/// int32, an int64, a float, or the variant's tensor table
/// (kMaxVariantTensors pairs of a pointer and an int64).
enum class ArgKind { Ptr, Strides, I32, I64, F32, VariantTensors };

/// The kind of a field of C++ type \p T; a type with no kind does not compile.
template <typename T> constexpr ArgKind argKindOf() {
  if constexpr (std::is_pointer_v<T>)
    return ArgKind::Ptr;
  else if constexpr (std::is_same_v<T, TensorStrides>)
    return ArgKind::Strides;
  else if constexpr (std::is_same_v<T, int32_t>)
    return ArgKind::I32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ArgKind::I64;
  else if constexpr (std::is_same_v<T, VariantTensors>)
    return ArgKind::VariantTensors;
  else {
    static_assert(
        std::is_same_v<T, float>,
        "a KernelArgs field is a pointer, TensorStrides, int32_t, int64_t, "
        "float or VariantTensors");
    return ArgKind::F32;
  }
}

/// KernelArgs' field kinds in layout order, as ir/ lays them out.
inline constexpr ArgKind kKernelArgsKinds[] = {
#define KERNEL_ARG(Name, Index, Type, Doc) argKindOf<Type>(),
#include "ir/KernelArgs.def"
};

/// KernelArgs' field names in layout order, as written in C++ and in IR.
inline constexpr const char *kKernelArgsNames[] = {
#define KERNEL_ARG(Name, Index, Type, Doc) #Name,
#include "ir/KernelArgs.def"
};

/// KernelArgs::tailCounters per tail item: one for each group of threads
/// that shares a query tile's rows (a wgmma consumer warpgroup).
inline constexpr unsigned kTailGroups = 4;

/// Whether \p f's work items carry a split index: the forward families that
/// cut key ranges. splitkv_combine reads numSplits as the count of partials
/// to merge, one item per query tile.
inline bool hasSplitWorkItems(Family f) {
  return f == Family::FwdSplitKv || f == Family::FwdPaged;
}

/// Whether \p f is one of a split-KV call's kernels: a family that cuts key
/// ranges, or splitkv_combine. On sm_90a they launch while the kernel before
/// them still runs and wait for it in place (griddepcontrol), so the code
/// generator and the launch must agree on this set.
inline bool isSplitKvFamily(Family f) {
  return hasSplitWorkItems(f) || f == Family::SplitKvCombine;
}

/// Whether \p spec's kernel may launch while the kernel before it on the
/// stream still runs, and waits for it in place where the arch has
/// grid_dependency: split-KV's kernels, and a v_pretranspose kernel, whose
/// blocks take the SMs as V^T's pass drains. The code generator (the wait)
/// and the launch (the attribute) read this one predicate.
inline bool waitsForKernelBefore(const KernelSpec &spec) {
  return isSplitKvFamily(spec.family) || spec.v_pretranspose;
}

/// The heads a forward family's work items run over: headsKv under
/// pack_gqa, where one item's tile packs the query heads of a K/V head,
/// else headsQ (docs/families.md).
inline int64_t itemHeads(const KernelSpec &spec, int64_t headsQ,
                         int64_t headsKv) {
  return spec.pack_gqa ? headsKv : headsQ;
}

/// The query rows of one sequence and item head: seqlenQ tokens, each
/// headsQ / headsKv rows under pack_gqa.
inline int64_t itemQueryRows(const KernelSpec &spec, int64_t seqlenQ,
                             int64_t headsQ, int64_t headsKv) {
  return spec.pack_gqa && headsKv > 0 ? seqlenQ * (headsQ / headsKv) : seqlenQ;
}

/// bwd_dq_dk_dv's first work items, one per key tile of a (sequence, K/V
/// head), own dK and dV; the batch * headsQ * numQTiles after them own dQ
/// of a query tile (ir/BackwardKernel.h). Under head_items one item per
/// (sequence, K/V head) owns dK, dV and its group's dQ, and none follow.
inline int64_t bwdKeyItems(const KernelSpec &spec, int64_t batch,
                           int64_t headsKv, int64_t seqlenK) {
  if (spec.head_items)
    return batch * headsKv;
  return batch * headsKv * ((seqlenK + spec.bn - 1) / spec.bn);
}

/// Whether bwd_dq_dk_dv's key items also add each step's dS K into
/// KernelArgs::dQAccum (FlashAttention-2's split, which bwd_convert_dq
/// finishes): on GPU targets unless deterministic=1. Else query items after
/// the key items own dQ, one writer per element (the host), or head items
/// sum it (head_items=1, the host).
inline bool bwdKeyItemsAddDq(const KernelSpec &spec) {
  return !spec.deterministic && findArch(spec.target) &&
         findArch(spec.target)->backend != Backend::Host;
}

/// Whether query items follow bwd_dq_dk_dv's key items (bwdKeyItems).
inline bool bwdHasQueryItems(const KernelSpec &spec) {
  return !bwdKeyItemsAddDq(spec) && !spec.head_items;
}

/// Whether bwd_dq_dk_dv sums dQ in KernelArgs::dQAccum: where key items add
/// it atomically, or where head items sum it for a dQ that is not fp32 (an
/// fp32 dQ is its own sum, so there head items add into dQ itself).
inline bool bwdSumsDqInWorkspace(const KernelSpec &spec) {
  return bwdKeyItemsAddDq(spec) ||
         (spec.head_items && spec.outType() != DType::F32);
}

/// v_pretranspose=1: the keys of each V^T row the pass writes, seqlenK
/// rounded up to its blocks of kPretransposeKeys (the rest are zeros).
inline constexpr int64_t kPretransposeKeys = 64;
inline int64_t pretransposedKeys(int64_t seqlenK) {
  return (seqlenK + kPretransposeKeys - 1) / kPretransposeKeys *
         kPretransposeKeys;
}
/// Bytes of V^T the pass writes for \p spec's call of \p batch sequences
/// of up to \p seqlenK keys over \p headsKv heads (fp8: one a value).
inline int64_t pretransposedValuesBytes(const KernelSpec &spec, int64_t batch,
                                        int64_t headsKv, int64_t seqlenK) {
  return batch * headsKv * int64_t(spec.headDimV()) *
         pretransposedKeys(seqlenK);
}
/// Threads of one block of the pass, and the bytes of V^T rows it stages
/// in shared memory for a V head dim of \p dv (68-byte rows).
inline constexpr unsigned kPretransposeThreads = 256;
constexpr unsigned pretransposeSharedBytes(unsigned dv) {
  return dv * (kPretransposeKeys + 4);
}
/// The pass's kernel: its own entry point in the forward kernel's module.
inline std::string pretransposeSymbol(llvm::StringRef kernelName) {
  return kernelName.str() + "_vt";
}

/// The host entry point: runs work items [begin, end), where item
/// w = ((b * heads) + h) * numQTiles + qTile (heads: itemHeads), times
/// max(numSplits, 1) plus the split when hasSplitWorkItems(family).
using HostKernelFn = void (*)(const KernelArgs *params, int64_t begin,
                              int64_t end);

} // namespace fmhajit
