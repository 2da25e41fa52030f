//===- ApiTesting.cpp - Running the public API against the reference -----===//
#include "tests/e2e/ApiTesting.h"
#include "runtime/DeviceCopies.h"
#include "runtime/HostTensor.h"
#include "runtime/ProblemLowering.h"
#include "runtime/Reference.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

const std::string &e2e::apiCacheDir() {
  // Never destroyed: the atexit handler is registered while `dir` is being
  // built, so it runs after dir's destructor would have (a use after free
  // that AddressSanitizer found).
  static const std::string &dir = *new std::string([] {
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueDirectory("fmhajit-api-test", path))
      return std::string();
    std::string text(path);
    std::atexit([] { llvm::sys::fs::remove_directories(apiCacheDir()); });
    return text;
  }());
  return dir;
}

namespace {
/// One tensor in the caller's layout, and the packed view the reference
/// reads: [batch, seq, heads, dim], or [total, heads, dim] under varlen.
struct LaidOut {
  LaidOut(DType type, const TensorShape &shape, const TensorStrides &strides)
      : shape(shape), strides(strides), data(type, size_t(spanElements(shape, strides))) {}

  template <typename Fn> void forEach(Fn fn) const {
    int64_t packed = 0;
    for (int64_t b = 0; b < shape.batch; ++b)
      for (int64_t s = 0; s < shape.seq; ++s)
        for (int64_t h = 0; h < shape.heads; ++h)
          for (int64_t x = 0; x < shape.dim; ++x)
            fn(packed++, b * strides.batch + s * strides.row + h * strides.head + x);
  }
  std::vector<float> packed() const {
    std::vector<float> out(size_t(shape.batch * shape.seq * shape.heads * shape.dim));
    forEach([&](int64_t p, int64_t at) { out[size_t(p)] = data.get(size_t(at)); });
    return out;
  }

  TensorShape shape;
  TensorStrides strides;
  HostTensor data;
};
} // namespace

// The host path: the plan reads and writes the host buffers directly.
static std::string runOnHost(const api::Plan &plan, LaidOut &q, LaidOut &k, LaidOut &v, LaidOut &o,
                             std::vector<float> &lse) {
  api::Status s = api::run(plan, {q.data.data(), k.data.data(), v.data.data(), o.data.data(),
                                  lse.empty() ? nullptr : lse.data()});
  return s.ok() ? "" : s.toString();
}

// The CUDA path: device copies of every buffer (cu_seqlens and slopes
// too: a GPU plan reads them from device memory) and the plan's workspace,
// run on the legacy stream, and O and LSE copied back (cuMemcpyDtoH waits
// for the kernels).
static std::string runOnCuda(const api::Plan &plan, const LoweredProblem &l, LaidOut &q, LaidOut &k,
                             LaidOut &v, LaidOut &o, std::vector<float> &lse) {
  DeviceCopies gpu;
  api::Tensors t{gpu.upload(q.data.data(), q.data.sizeInBytes(), "q"),
                 gpu.upload(k.data.data(), k.data.sizeInBytes(), "k"),
                 gpu.upload(v.data.data(), v.data.sizeInBytes(), "v"),
                 gpu.upload(o.data.data(), o.data.sizeInBytes(), "o"),
                 gpu.upload<float>(lse.data(), lse.size() * 4, "lse"),
                 gpu.upload<const int32_t>(l.cuSeqlensQ.data(), l.cuSeqlensQ.size() * 4, "cu_seqlens_q"),
                 gpu.upload<const int32_t>(l.cuSeqlensK.data(), l.cuSeqlensK.size() * 4, "cu_seqlens_k"),
                 gpu.upload<const float>(l.alibiSlopes.data(), l.alibiSlopes.size() * 4, "slopes")};
  t.workspace = gpu.allocate(size_t(plan.workspaceBytes()), "workspace");
  if (!gpu.error().empty())
    return gpu.error();
  api::Status s = api::run(plan, t);
  if (!s.ok())
    return s.toString();
  gpu.download(t.o, o.data.data(), o.data.sizeInBytes());
  gpu.download(t.lse, lse.data(), lse.size() * 4);
  return gpu.error();
}

ApiCheck e2e::checkApi(const api::Problem &problem, api::Options options, uint64_t seed) {
  ApiCheck check;
  std::optional<api::Plan> plan = planChecked(problem, options);
  if (!plan)
    return check;
  check.plan = *plan;
  llvm::Expected<LoweredProblem> l = lowerProblem(problem, plan->target());
  EXPECT_TRUE(bool(l)) << llvm::toString(l.takeError());
  if (!l)
    return check;
  const KernelSpec &f = l->features;
  LaidOut q(f.dtype, l->qShape, l->strides.q), k(f.dtype, l->kShape, l->strides.k),
      v(f.dtype, l->vShape, l->strides.v), o(f.outType(), l->oShape, l->strides.o);
  q.data.fillNormal(seed);
  k.data.fillNormal(seed + 1);
  v.data.fillNormal(seed + 2);
  o.data.poison();
  std::vector<float> lse(f.lse ? size_t(numElements(l->problem.lseShape())) : 0, NAN);
  std::string error = plan->device() == api::Device::Cuda ? runOnCuda(*plan, *l, q, k, v, o, lse)
                                                          : runOnHost(*plan, q, k, v, o, lse);
  EXPECT_EQ(error, "");
  if (!error.empty())
    return check;
  ReferenceOutput ref = referenceForward(f, l->problem, q.packed(), k.packed(), v.packed());
  check.compare = compareOutputs(o.packed(), ref.o, lse, ref.lse, f.outType());
  EXPECT_TRUE(check.compare.pass) << check.compare.summary() << "\n" << plan->describe();
  return check;
}
