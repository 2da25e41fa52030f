//===- Calls.cpp - attention and plan, from the call tuples to the API
//-----===//
#include "python/src/Calls.h"
#include "python/src/CallArgs.h"
#include "python/src/ExchangeApi.h"
#include "python/src/NumpyArray.h"
#include "python/src/PlanCache.h"
#include "python/src/StatusError.h"
#include "python/src/TorchTensor.h"
#include <cmath>
#include <pybind11/stl.h>

namespace py = pybind11;
using namespace fmhajit;
using namespace fmhajit::python;

static PlanCache &planCache() {
  static PlanCache cache;
  return cache;
}

namespace {
/// The plan of the last call and its key, and the buffer keys are written
/// into: a call mostly runs the plan of the call before, which this finds
/// with one comparison of the key's bytes, no allocation, no lock and no
/// hash (the cache's lookup of a 300-byte key). Read and written only with
/// the GIL held, which serializes every caller; never destroyed (it holds
/// a plan).
struct LastPlan {
  std::string buffer, key;
  std::optional<api::Plan> plan;
};
} // namespace

static LastPlan &lastPlan() {
  static LastPlan *last = new LastPlan();
  return *last;
}

size_t python::cachedPlans() { return planCache().size(); }

void python::clearPlans() {
  lastPlan().plan.reset();
  planCache().clear();
}

static api::Mask maskNamed(const std::string &name) {
  if (name == "none")
    return api::Mask::None;
  if (name == "causal")
    return api::Mask::Causal;
  if (name == "causal_br")
    return api::Mask::CausalBottomRight;
  if (name == "window")
    return api::Mask::Window;
  throw py::value_error("mask " + name +
                        ": use none, causal, causal_br or window");
}

unsigned python::threadCount(int64_t n) {
  if (n < 0 || n > 65536)
    throw py::value_error("threads " + std::to_string(n) +
                          ": give a count from 1 to 65536, or 0 for one per "
                          "hardware thread");
  return unsigned(n);
}

// The keywords tuple, in Calls.h's order.
static CallKeywords readKeywords(py::tuple t) {
  if (t.size() != 12)
    throw py::type_error("internal: the keywords tuple needs 12 entries");
  CallKeywords kw;
  kw.mask = maskNamed(t[0].cast<std::string>());
  kw.windowLeft = t[1].cast<int64_t>();
  kw.windowRight = t[2].cast<int64_t>();
  kw.softcap = t[3].cast<float>();
  kw.scale = t[4].cast<float>();
  kw.alibi = t[5].cast<bool>();
  kw.options.threads = threadCount(t[6].cast<int64_t>());
  kw.options.target = t[7].cast<std::string>();
  kw.options.kernel = t[8].cast<std::string>();
  kw.options.cacheDir = t[9].cast<std::string>();
  if (!t[10].is_none())
    kw.stream = t[10].cast<intptr_t>();
  if (!t[11].is_none())
    kw.exportStream = t[11].cast<intptr_t>();
  return kw;
}

// readKeywords, once per tuple: the Python layer memoizes its keywords
// tuples (fmhajit/__init__.py, _keywords), so a call mostly passes the
// very tuple of the call before. Holding a reference to it keeps its
// address from being reused, and a tuple of str, int, float, bool and None
// cannot change: the same object reads the same. The GIL serializes every
// caller.
static CallKeywords readKeywordsOnce(py::tuple t) {
  struct Last {
    py::object tuple;
    CallKeywords keywords;
  };
  static Last *last = new Last(); // never destroyed: it holds a reference
  if (t.ptr() != last->tuple.ptr()) {
    CallKeywords keywords = readKeywords(t); // a bad tuple raises, unkept
    last->keywords = std::move(keywords);
    last->tuple = t;
  }
  return last->keywords;
}

// (p, seed, offset) or None. The Python layer has checked the seed's and
// the offset's ranges; p goes to the API as the float the kernels get,
// which checks it is in [0, 1) (a p just below 1 that rounds to 1 in float
// becomes the float below 1, as `fmhajit run --dropout-p` does).
static std::optional<api::Dropout> readDropout(py::handle t) {
  if (t.is_none())
    return std::nullopt;
  auto values = t.cast<py::tuple>();
  if (values.size() != 3)
    throw py::type_error("internal: dropout needs (p, seed, offset)");
  double p = values[0].cast<double>();
  auto pf = float(p);
  if (p < 1 && pf == 1.0f)
    pf = std::nextafter(1.0f, 0.0f);
  return api::Dropout{pf, values[1].cast<uint64_t>(),
                      values[2].cast<uint32_t>()};
}

// __dlpack__'s stream asking the producer for no synchronization at all.
static const intptr_t kNoSync = -1;

// The stream given to \p array's __dlpack__ (importArray).
static std::optional<intptr_t> exportStreamOf(py::handle array,
                                              const CallKeywords &kw) {
  if (kw.streamOwner && Py_TYPE(array.ptr()) != kw.streamOwner)
    return kw.stream;
  return kw.exportStream;
}

// Reads q into \p view. Where the keywords name no stream and q's type has
// DLPack's exchange API (ExchangeApi.h), a CUDA call runs on that library's
// current work stream of q's device, where its arrays' work is ordered
// already: they are read without synchronizing (export stream -1; q too,
// also where the API declines q and its __dlpack__ exports it), and the
// arrays of other libraries are exported with that stream.
static void readQuery(py::handle q, CallKeywords &kw, ArrayView &view,
                      GradKnown grad) {
  const dlx::ExchangeApi *api = nullptr;
  if (!kw.stream && !kw.exportStream)
    api = exchangeApiOf(q);
  if (!api)
    return importArrayInto(q, "q", kw.exportStream, view, grad);
  importArrayInto(q, "q", kNoSync, view, grad);
  if (view.onCuda) {
    kw.stream = currentWorkStream(*api, view.deviceId);
    kw.exportStream = kNoSync;
    kw.streamOwner = Py_TYPE(q.ptr());
  }
}

// \p array into \p view where it is not None.
static void readOptional(py::handle array, const char *what,
                         const CallKeywords &kw,
                         std::optional<ArrayView> &view) {
  if (!array.is_none())
    importArrayInto(array, what, exportStreamOf(array, kw), view.emplace());
}

// q, k, v, out and lse (None where not given) into \p a; \p kw gets q's
// stream where it names none (readQuery). \p grad: whether q, k and v
// are plain tensors known not to require grad.
static void readOperands(py::handle q, py::handle k, py::handle v,
                         py::handle out, py::handle lse, CallKeywords &kw,
                         CallArrays &a, GradKnown grad = GradKnown::No) {
  readQuery(q, kw, a.q, grad);
  importArrayInto(k, "k", exportStreamOf(k, kw), a.k, grad);
  importArrayInto(v, "v", exportStreamOf(v, kw), a.v, grad);
  readOptional(out, "out", kw, a.out);
  readOptional(lse, "lse", kw, a.lse);
}

// The arrays tuple, in Calls.h's order (readOperands).
static CallArrays readArrays(py::handle q, py::handle k, py::handle v,
                             py::tuple t, CallKeywords &kw) {
  if (t.size() != 10)
    throw py::type_error("internal: the arrays tuple needs 10 entries");
  CallArrays a;
  readOperands(q, k, v, t[0], t[1], kw, a);
  readOptional(t[2], "cu_seqlens_q", kw, a.cuSeqlensQ);
  readOptional(t[3], "cu_seqlens_k", kw, a.cuSeqlensK);
  readOptional(t[4], "cu_seqlens_q (device)", kw, a.cuSeqlensQDevice);
  readOptional(t[5], "cu_seqlens_k (device)", kw, a.cuSeqlensKDevice);
  readOptional(t[6], "alibi_slopes", kw, a.alibiSlopes);
  readOptional(t[7], "alibi_slopes (device)", kw, a.alibiSlopesDevice);
  readOptional(t[8], "sinks", kw, a.sinks);
  readOptional(t[9], "attn_bias", kw, a.bias);
  return a;
}

// The variant argument, (source, name, tensors) or None (Calls.h): the
// source and name into \p kw, the tensors, imported as
// variant_tensors[slot], into \p a.
static void readVariant(py::handle variant, CallKeywords &kw, CallArrays &a) {
  if (variant.is_none())
    return;
  auto t = variant.cast<py::tuple>();
  if (t.size() != 3)
    throw py::type_error("internal: variant needs (source, name, tensors)");
  kw.variant = t[0].cast<std::string>();
  kw.variantName = t[1].cast<std::string>();
  auto tensors = t[2].cast<py::tuple>();
  for (size_t slot = 0; slot < tensors.size(); ++slot) {
    std::string what = "variant_tensors[" + std::to_string(slot) + "]";
    a.variantTensors.push_back(importArray(tensors[slot], what.c_str(),
                                           exportStreamOf(tensors[slot], kw)));
  }
}

// The process's plan for (problem, options), planned without the GIL the
// first time.
static api::Plan planFor(const api::Problem &problem,
                         const api::Options &options, bool backward = false) {
  LastPlan &last = lastPlan();
  std::string_view written = planKey(problem, options, backward, last.buffer);
  if (last.plan && written == last.key)
    return *last.plan;
  std::string key(written); // the buffer is not ours once the GIL is released
  std::optional<api::Plan> plan = planCache().find(key);
  if (!plan) {
    std::optional<api::Result<api::Plan>> planned;
    {
      py::gil_scoped_release release;
      planned.emplace(backward ? api::planBackward(problem, options)
                               : api::plan(problem, options));
    }
    plan = valueOrRaise(std::move(*planned));
    planCache().insert(key, *plan);
  }
  last.key = std::move(key);
  last.plan = plan;
  return std::move(*plan);
}

// A CUDA plan's workspace, from the caller's allocator, else from the
// allocator of q's library where q was read through its exchange API (the
// host takes fmhajit's own per-thread buffer).
static std::optional<ArrayView> workspaceFor(const api::Plan &plan,
                                             py::object allocate,
                                             const CallKeywords &kw,
                                             const ArrayView &q) {
  int64_t bytes = plan.workspaceBytes();
  if (plan.device() == api::Device::Host || bytes == 0)
    return std::nullopt;
  if (allocate.is_none() && !(q.producer && q.onCuda))
    throw py::value_error("this CUDA plan needs a workspace of " +
                          std::to_string(bytes) +
                          " bytes and no allocator was given");
  ArrayView ws;
  if (allocate.is_none()) {
    ws = makeExchangeWorkspace(q, bytes);
  } else {
    py::object made = allocate(bytes);
    ws = importArray(made, "workspace", exportStreamOf(made, kw));
  }
  if (!ws.onCuda || ws.ndim != 1 || ws.shape[0] < bytes)
    throw py::value_error("workspace: the allocator must return " +
                          std::to_string(bytes) + " bytes of CUDA memory");
  return ws;
}

// Runs \p call (api::run or api::backward) of \p plan on \p tensors
// without the GIL, with the workspace a CUDA plan needs.
template <typename T, typename Call>
static void launch(const api::Plan &plan, T tensors, Call call,
                   py::object workspace, const CallKeywords &kw,
                   const ArrayView &q) {
  std::optional<ArrayView> ws = workspaceFor(plan, workspace, kw, q);
  if (ws)
    tensors.workspace = ws->data;
  api::Status status;
  {
    py::gil_scoped_release release;
    status = call(plan, tensors);
  }
  checkStatus(status);
}

// A new out for \p q (a plain tensor or a NumPy array: canMakeOutput),
// packed like q with v's head_dim, and its view into \p view.
static py::object newOutput(py::handle q, const CallArrays &a,
                            const CallKeywords &kw, ArrayView &view) {
  int64_t headDimV = a.v.shape[a.v.ndim - 1];
  if (isPlainTensor(q))
    return newTorchOutput(q, a.q, headDimV, kw.exportStream, view);
  return newNumpyOutput(a.q, headDimV, view);
}

// Runs the forward of arrays read into \p a, making out where \p givenOut
// is None (after the inputs are checked: made packed like q, it fits every
// check an out gets), and returns out.
static py::object forward(py::handle q, CallArrays &a, py::handle givenOut,
                          CallKeywords &kw, py::object workspace) {
  if (!a.out && !isPlainTensor(q) && !isNumpyArray(q))
    throw py::value_error("out: attention needs an output array");
  api::Problem problem = problemFor(a, kw);
  auto out = py::reinterpret_borrow<py::object>(givenOut);
  if (!a.out) {
    a.out.emplace();
    out = newOutput(q, a, kw, *a.out);
  }
  api::Plan plan = planFor(problem, kw.options);
  launch(plan, tensorsFor(a, kw), api::run, workspace, kw, a.q);
  return out;
}

// One forward call; \p variant is None for a plain one.
static py::object attention(py::handle q, py::handle k, py::handle v,
                            py::tuple arrays, py::tuple keywords,
                            py::object workspace, py::object dropout,
                            py::handle variant) {
  CallKeywords kw = readKeywordsOnce(keywords);
  kw.dropout = readDropout(dropout);
  CallArrays a = readArrays(q, k, v, arrays, kw);
  readVariant(variant, kw, a);
  return forward(q, a, arrays[0], kw, std::move(workspace));
}

py::object python::runCommonAttention(py::handle q, py::handle k, py::handle v,
                                      py::handle out, py::handle lse,
                                      CallKeywords &kw, GradKnown grad) {
  CallArrays a;
  readOperands(q, k, v, out, lse, kw, a, grad);
  return forward(q, a, out, kw, py::none());
}

py::object python::runAttention(py::handle q, py::handle k, py::handle v,
                                py::tuple arrays, py::tuple keywords,
                                py::object workspace, py::object dropout) {
  return attention(q, k, v, arrays, keywords, workspace, dropout, py::none());
}

py::object python::runAttentionWithVariant(py::handle q, py::handle k,
                                           py::handle v, py::tuple arrays,
                                           py::tuple keywords,
                                           py::object workspace,
                                           py::object dropout,
                                           py::tuple variant) {
  return attention(q, k, v, arrays, keywords, workspace, dropout, variant);
}

void python::runBackward(py::handle q, py::handle k, py::handle v,
                         py::tuple arrays, py::tuple grads, py::tuple keywords,
                         py::object workspace, py::object dropout) {
  CallKeywords kw = readKeywords(keywords);
  kw.dropout = readDropout(dropout);
  CallArrays a = readArrays(q, k, v, arrays, kw);
  if (!a.out || !a.lse)
    throw py::value_error("backward needs the forward's out and lse");
  if (grads.size() != 4)
    throw py::type_error("internal: grads needs (dO, dQ, dK, dV)");
  GradArrays g{importArray(grads[0], "dO", exportStreamOf(grads[0], kw)),
               importArray(grads[1], "dQ", exportStreamOf(grads[1], kw)),
               importArray(grads[2], "dK", exportStreamOf(grads[2], kw)),
               importArray(grads[3], "dV", exportStreamOf(grads[3], kw))};
  api::Problem problem = problemFor(a, kw);
  api::Plan plan = planFor(problem, kw.options, /*backward=*/true);
  launch(plan, backwardTensorsFor(a, g, kw), api::backward, workspace, kw, a.q);
}

static py::dict stepDict(const api::PlanStep &step) {
  py::dict load;
  load["origin"] = step.load.origin;
  load["codegen_ms"] = step.load.codegenMs;
  load["driver_ms"] = step.load.driverMs;
  load["registers"] = step.load.registers;
  load["shared_bytes"] = step.load.sharedBytes;
  py::dict d;
  d["kernel"] = step.kernel;
  d["role"] = step.role;
  d["work_items"] = step.workItems;
  d["key_splits"] = step.keySplits;
  d["grid"] = step.grid;
  d["workspace_offset"] = step.workspaceOffset;
  d["workspace_bytes"] = step.workspaceBytes;
  d["why"] = step.why;
  d["load"] = load;
  return d;
}

static py::dict planDict(const api::Plan &plan) {
  py::list steps, timings;
  for (const api::PlanStep &step : plan.steps())
    steps.append(stepDict(step));
  for (const api::CandidateTiming &t : plan.timings())
    timings.append(py::make_tuple(t.kernel, t.ms));
  py::dict d;
  d["target"] = plan.target();
  d["device"] = plan.device() == api::Device::Host ? "host" : "cuda";
  d["loaded"] = plan.loaded();
  d["workspace_bytes"] = plan.workspaceBytes();
  d["steps"] = steps;
  d["decisions"] = py::cast(plan.decisions());
  d["timings"] = timings;
  d["variant_tensors"] = plan.variantTensorCount();
  d["describe"] = plan.describe();
  return d;
}

static std::optional<api::Device> deviceNamed(py::object name) {
  if (name.is_none())
    return std::nullopt;
  std::string text = name.cast<std::string>();
  if (text == "host" || text == "cpu")
    return api::Device::Host;
  if (text == "cuda")
    return api::Device::Cuda;
  throw py::value_error("device " + text + ": use host or cuda");
}

py::dict python::describePlan(py::handle q, py::handle k, py::handle v,
                              py::tuple arrays, py::tuple keywords,
                              py::object device, bool load, bool autotune,
                              bool backward, py::object dropout,
                              py::object variant) {
  CallKeywords kw = readKeywords(keywords);
  kw.dropout = readDropout(dropout);
  kw.device = deviceNamed(device);
  kw.options.load = load;
  kw.options.autotune = autotune;
  CallArrays a = readArrays(q, k, v, arrays, kw);
  readVariant(variant, kw, a);
  api::Problem problem = problemFor(a, kw);
  std::optional<api::Result<api::Plan>> planned;
  {
    py::gil_scoped_release release;
    planned.emplace(backward ? api::planBackward(problem, kw.options)
                             : api::plan(problem, kw.options));
  }
  return planDict(valueOrRaise(std::move(*planned)));
}
