//===- fmhajit/Problem.h - One attention call, described by its user ------===//
//
// A Problem says what to compute: shapes, dtypes, where each tensor's
// elements are, the score modifiers, the device. A Tensors says where this
// call's memory is. plan() turns a Problem into kernels; run() feeds them a
// Tensors. Nothing here names a kernel: fmhajit chooses (see Fmhajit.h).
//
// Tensor shapes are logical; the last dim is always contiguous:
//   Q [batch, seqlenQ, headsQ, headDim]     K [batch, seqlenK, headsKv,
//   headDim] O [batch, seqlenQ, headsQ, headDimV]    V [batch, seqlenK,
//   headsKv, headDimV] LSE (fp32, packed) [batch, headsQ, seqlenQ]
// Under varlen (cuSeqlensQ/K given) sequences are packed end to end:
//   Q [totalQ, headsQ, headDim] ... and LSE [headsQ, totalQ].
// Semantics (i, j: query and key index in a sequence of Sq queries and Sk
// keys; diag = i + Sk - Sq):  s = scale * q.k;  softcap: s = c*tanh(s/c);
// alibi: s -= slope_h * |diag - j|;  causal: j <= i;  causal bottom-right:
// j <= diag;  window: diag - left <= j <= diag + right (-1: unbounded);
// query head h reads K/V head h / (headsQ / headsKv).
// sink (gpt-oss): head h's logit sink_h joins the softmax's denominator,
// O_i = sum_j e^(s_ij) V_j / (e^(sink_h) + sum_j e^(s_ij)), and the LSE;
// a row that sees no key gets O = 0 and LSE = sink_h.
// dropout (training): after the softmax each P_ij is kept with probability
// 1 - p and scaled by 1 / (1 - p), or zeroed; the LSE is the softmax's
// before dropout. The keep-mask is Philox4x32-10 of (sequence b, query head
// h, query i, key j) under the run-time seed and offset (Tensors::dropout),
// the same on every device (docs/families.md#dropout).
// bias (elementwise, attn_mask): s += bias[b, h, i, j] after softcap, before
// the mask; fp32, logically [batch, headsQ, seqlenQ, seqlenK] (BiasStrides).
// Paged K/V (PagedKv set): K and V are page pools instead, and sequence b
// has seqlensK[b] keys (its own Sk above), key j being row j % pageSize of
// page blockTable[b][j / pageSize]:
//   K pool [numPages, pageSize, headsKv, headDim]   (packed)
//   V pool [numPages, pageSize, headsKv, headDimV]  block table int32
//   [batch, maxPagesPerSeq]
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fmhajit::api {

enum class Device { Host, Cuda, Hip };

enum class DType { F32, F16, BF16, F8E4M3, F8E5M2 };

enum class Mask {
  None,
  Causal,            ///< j <= i (top-left aligned)
  CausalBottomRight, ///< j <= i + Sk - Sq
  Window,            ///< sliding window: windowLeft / windowRight
};

enum class Layout {
  BSHD,    ///< [batch, seq, heads, dim], packed (varlen: [total, heads, dim])
  BHSD,    ///< [batch, heads, seq, dim], packed (varlen: [heads, total, dim])
  Strided, ///< the element strides given in TensorLayout
};

/// Where the elements of one tensor are. Strides count elements; the last
/// dim is contiguous. Under varlen the batch stride is unused.
struct TensorLayout {
  Layout layout = Layout::BSHD;
  int64_t batchStride = 0, seqStride = 0, headStride = 0; ///< Strided only

  static TensorLayout bshd() { return {}; }
  static TensorLayout bhsd() { return {Layout::BHSD, 0, 0, 0}; }
  static TensorLayout strided(int64_t batch, int64_t seq, int64_t head) {
    return {Layout::Strided, batch, seq, head};
  }
};

/// A paged K/V cache (vLLM's PagedAttention): fixed-size pages drawn from
/// one pool per tensor, each sequence's pages listed in a block table, so
/// caches grow a page at a time without moving rows.
struct PagedKv {
  int64_t pageSize = 0;       ///< rows per page, a power of two; 0: not paged
  int64_t numPages = 0;       ///< pages in each of the K and V pools
  int64_t maxPagesPerSeq = 0; ///< the block table's row length

  bool enabled() const { return pageSize != 0; }
};

/// Element strides of an elementwise bias, logically [batch, headsQ,
/// seqlenQ, seqlenK] fp32: element (b, h, i, j) is at b * batch + h * head +
/// i * query + j * key. A stride of 0 broadcasts that dim: {0, Sq*Sk, Sk, 1}
/// shares one bias over the batch, {Sk, 0, 0, 1} is a key-padding bias.
struct BiasStrides {
  int64_t batch = 0, head = 0, query = 0, key = 0;

  /// The packed [batch, headsQ, seqlenQ, seqlenK] layout.
  static BiasStrides packed(int64_t headsQ, int64_t seqlenQ, int64_t seqlenK) {
    return {headsQ * seqlenQ * seqlenK, seqlenQ * seqlenK, seqlenK, 1};
  }
};

/// Dropout's run-time arguments (Problem::dropout): p, the probability of
/// dropping, in [0, 1); the Philox seed; the offset, one of 2^32 streams of
/// the seed (a layer, a step). A forward and its backward must get the same.
struct Dropout {
  float p = 0;
  uint64_t seed = 0;
  uint32_t offset = 0;
};

/// One run-time tensor a variant reads with fmhajit_tensor(slot, index)
/// (docs/variants.md#run-time-tensors): fp32, read flat, element `index`
/// where 0 <= index < length and 0 elsewhere.
struct VariantTensor {
  const float *data = nullptr; ///< host memory, or device memory on a GPU
  int64_t length = 0;          ///< elements; at least 1
};

/// One forward attention call.
struct Problem {
  int64_t batch = 1;   ///< sequences; under varlen, cuSeqlensQ.size() - 1
  int64_t headsQ = 1;  ///< query and output heads
  int64_t headsKv = 0; ///< K/V heads, dividing headsQ (GQA/MQA); 0: headsQ
  int64_t seqlenQ = 1; ///< every sequence's query length (not under varlen)
  int64_t seqlenK = 0; ///< every sequence's key length; 0: seqlenQ
  /// Varlen: cumulative lengths [batch + 1], starting at 0 (host copies;
  /// plan() reads them to size the grid).
  std::vector<int32_t> cuSeqlensQ, cuSeqlensK;
  /// K and V in a paged cache (pagesKv.enabled()): then seqlensK, not
  /// seqlenK, gives the keys, and K/V layouts stay BSHD (the pools').
  PagedKv pagesKv;
  /// Paged: keys of each sequence [batch], each >= 1 and at most
  /// maxPagesPerSeq * pageSize (host copy: plan() sizes the split by it;
  /// Tensors::seqlensK may give the current ones at run time).
  std::vector<int32_t> seqlensK;
  int64_t headDim = 128; ///< Q/K head dim
  int64_t headDimV = 0;  ///< V/O head dim; 0: headDim
  DType dtype = DType::BF16;
  std::optional<DType> outDtype; ///< O's dtype; unset: dtype (fp8: bf16)
  TensorLayout q, k, v, o;
  Mask mask = Mask::None;
  int64_t windowLeft = -1, windowRight = -1; ///< Mask::Window; -1 unbounded
  float softcap = 0;                         ///< c in c*tanh(s/c); 0: off
  bool alibi = false;
  std::vector<float> alibiSlopes; ///< one per query head; empty: ALiBi's own
  /// Attention sinks: one logit per query head (see the semantics above).
  bool sink = false;
  /// The [headsQ] sink logits, finite or -inf (no sink for that head); on
  /// the host, used when Tensors::sinks is null. Empty: Tensors::sinks
  /// gives them at run time (required then).
  std::vector<float> sinks;
  /// An elementwise bias added to the scaled scores (FlashAttention's and
  /// PyTorch's attn_mask): Tensors::bias, fp32, required. Not with alibi,
  /// varlen or paged K/V.
  bool bias = false;
  /// Its element strides; unset: BiasStrides::packed. Each >= 0.
  std::optional<BiasStrides> biasStrides;
  /// Dropout on the attention probabilities: p, seed and offset are given
  /// at run time (Tensors::dropout, BackwardTensors::dropout). Not with
  /// paged K/V or fp8 inputs; plans never split such a problem's keys.
  bool dropout = false;
  /// A variant: C++ source defining `float score_mod(float score, int b,
  /// int h, int q, int k)` and/or `bool mask_mod(int b, int h, int q, int
  /// k)` (docs/variants.md). score_mod sees the scaled score after softcap
  /// and ALiBi; mask_mod is ANDed with the mask; q, k are positions in the
  /// sequence. Empty: none. It may read run-time tensors with `float
  /// fmhajit_tensor(int slot, long index)`, given to run() in
  /// Tensors::variantTensors (Plan::variantTensorCount() says how many).
  std::string variant;
  /// The variant's name in messages (clang's file:line:col); empty:
  /// "variant.cpp".
  std::string variantName;
  float scale = 0;      ///< softmax scale; 0: 1/sqrt(headDim)
  bool wantLse = false; ///< also write the log-sum-exp of each row
  Device device = Device::Host;
  void *stream =
      nullptr; ///< GPU: the CUstream / hipStream_t to launch on (null: default)
};

/// The memory of one call: host pointers for Device::Host, device pointers
/// otherwise. Outputs are written to the caller's memory only.
struct Tensors {
  /// Q, K, V, O; under paged K/V, k and v are the K and V page pools.
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void *o = nullptr;
  float *lse = nullptr; ///< required when the problem wants LSE
  /// Varlen on a GPU: device copies of the problem's cuSeqlensQ/K. On the
  /// host, null takes the plan's copies.
  const int32_t *cuSeqlensQ = nullptr, *cuSeqlensK = nullptr;
  /// ALiBi on a GPU: a device copy of the [headsQ] slopes. On the host,
  /// null takes the problem's (or ALiBi's default) slopes.
  const float *alibiSlopes = nullptr;
  /// Attention sinks: [headsQ] fp32 logits (a device copy on a GPU,
  /// required there). On the host, null takes Problem::sinks.
  const float *sinks = nullptr;
  /// Paged K/V: the [batch, maxPagesPerSeq] int32 block table (required).
  const int32_t *blockTable = nullptr;
  /// Paged K/V: each sequence's keys [batch], int32. On the host null
  /// takes the problem's seqlensK; given, it may differ from them (a cache
  /// that grew since plan()) within maxPagesPerSeq * pageSize rows. On a
  /// GPU, a device copy (required). The host checks the block table and
  /// these lengths before launching; a GPU launch cannot read them first.
  const int32_t *seqlensK = nullptr;
  /// Plan::workspaceBytes() bytes, when not 0 (device memory on a GPU; on
  /// the host, null takes a per-thread buffer fmhajit keeps).
  void *workspace = nullptr;
  /// fp8 (dtype F8E4M3 or F8E5M2): each tensor's descale factor, so that Q
  /// holds q / descaleQ rounded to fp8 and the kernel computes attention
  /// of descaleQ * Q, descaleK * K and descaleV * V. Finite and > 0; other
  /// dtypes take only 1.
  float descaleQ = 1, descaleK = 1, descaleV = 1;
  void *stream = nullptr; ///< GPU: null takes the problem's stream
  /// Problem::bias: the fp32 bias at Problem::biasStrides (device memory on
  /// a GPU); required.
  const float *bias = nullptr;
  /// Problem::dropout: p, seed and offset of this call (p = 0 keeps
  /// everything); without Problem::dropout, p must stay 0.
  Dropout dropout;
  /// The variant's run-time tensors in slot order: entry s is what its
  /// fmhajit_tensor(s, i) reads. Exactly Plan::variantTensorCount()
  /// entries (none for a variant that reads no tensor), each with data and
  /// a length of at least 1; device memory on a GPU.
  std::vector<VariantTensor> variantTensors;
};

} // namespace fmhajit::api
