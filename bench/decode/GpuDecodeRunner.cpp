//===- GpuDecodeRunner.cpp - One decode row on a CUDA GPU -----------------===//
//
// The host row's contenders on the GPU, on device copies of the same
// seeded inputs: the single-pass kernel, split-KV (fwd_splitkv and the
// combine on one stream) at each part count, and api::run() of the plan
// api::plan() makes for Device::Cuda (sized by the GPU's SMs). The split
// and single-pass kernels take the plan's tile: its first step's kernel,
// as a fwd or fwd_splitkv spec. Each contender is its launches and a
// stream synchronize, timed by the wall clock in turns like the host's, so
// the split's second launch costs what it costs a user.
//
//===----------------------------------------------------------------------===//
#include "bench/decode/DecodeRunner.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/device/DeviceCopies.h"
#include "runtime/device/GpuForwardLaunch.h"
#include "runtime/device/GpuResources.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Validate.h"
#include "llvm/ADT/STLExtras.h"
#include <functional>

using namespace fmhajit;
using namespace fmhajit::bench;

namespace {
/// \p spec with another family, resolved again (a fwd tile as fwd_splitkv).
llvm::Expected<KernelSpec> withFamily(KernelSpec spec, Family family) {
  spec.family = family;
  return validateSpec(spec);
}

double relL2To(const HostTensor &o, const HostTensor &ref) {
  std::vector<float> y = ref.toFloat();
  return compareOutputs(o.toFloat(), std::vector<double>(y.begin(), y.end()),
                        {}, {}, DType::BF16)
      .relL2;
}
} // namespace

llvm::Expected<DecodeResult> fmhajit::bench::runGpuDecodeRow(
    const DecodeShape &shape, std::vector<unsigned> candidates,
    KernelCache &cache, const TimingPolicy &policy) {
  auto driver = gpuDriverFor(Backend::Nvptx);
  if (!driver)
    return driver.takeError();
  api::Options options;
  api::Result<api::Plan> plan =
      api::plan(decodeProblem(shape, api::Device::Cuda), options);
  if (!plan.ok())
    return makeError(ErrorKind::Usage,
                     "api::plan: " + plan.status().toString());
  auto planned = decodeName(plan->steps().front().kernel);
  if (!planned)
    return planned.takeError();
  auto singleSpec = withFamily(*planned, Family::Fwd);
  auto splitSpec = withFamily(*planned, Family::FwdSplitKv);
  if (!singleSpec || !splitSpec)
    return llvm::joinErrors(singleSpec.takeError(), splitSpec.takeError());
  auto combineSpec = combineSpecFor(*splitSpec);
  if (!combineSpec)
    return combineSpec.takeError();
  auto single = GpuKernel::load(*driver, *singleSpec, cache);
  auto split = GpuKernel::load(*driver, *splitSpec, cache);
  auto combine = GpuKernel::load(*driver, *combineSpec, cache);
  if (!single || !split || !combine)
    return llvm::joinErrors(
        llvm::joinErrors(single.takeError(), split.takeError()),
        combine.takeError());
  GpuForwardLaunch splitLaunch{std::move(*split), std::move(*combine)};

  AttentionProblem p = decodeAttentionProblem(shape, *singleSpec);
  if (llvm::Error err = p.validate(*singleSpec))
    return std::move(err);
  HostTensor q(DType::BF16, numElements(p.qShape())),
      k(DType::BF16, numElements(p.kShape())),
      v(DType::BF16, numElements(p.vShape())),
      o(DType::BF16, numElements(p.oShape())),
      ref(DType::BF16, numElements(p.oShape()));
  q.fillNormal(1);
  k.fillNormal(2);
  v.fillNormal(3);
  o.poison();
  DeviceCopies dev(Backend::Nvptx);
  void *dq = dev.upload(q.data(), q.sizeInBytes(), "q");
  void *dk = dev.upload(k.data(), k.sizeInBytes(), "k");
  void *dv = dev.upload(v.data(), v.sizeInBytes(), "v");
  void *dSingle = dev.upload(o.data(), o.sizeInBytes(), "o (single)");
  void *dSplit = dev.upload(o.data(), o.sizeInBytes(), "o (split)");
  void *dPlan = dev.upload(o.data(), o.sizeInBytes(), "o (plan)");
  void *dWork = dev.allocate(size_t(plan->workspaceBytes()), "workspace");
  auto stream = GpuStream::create(*driver);
  if (!stream)
    return stream.takeError();

  DecodeResult result;
  result.shape = shape;
  result.threads = unsigned(driver->device().computeUnits);
  result.planSplits = unsigned(plan->steps().front().keySplits);
  result.planKernel = plan->steps().front().kernel;
  if (result.planSplits > 1 &&
      !llvm::is_contained(candidates, result.planSplits))
    candidates.push_back(result.planSplits);
  llvm::sort(candidates);
  llvm::erase_if(candidates, [](unsigned n) { return n < 2; });

  KernelArgs singleParams =
      makeKernelArgs(*singleSpec, p, {dq, dk, dv, dSingle});
  api::Tensors tensors{dq, dk, dv, dPlan};
  tensors.workspace = dWork;
  tensors.stream = stream->get();
  struct SplitRun {
    unsigned n;
    KernelArgs params;
  };
  std::vector<SplitRun> runs;
  for (unsigned n : candidates) {
    SplitKvWorkspaceSize size = splitKvWorkspaceSize(*splitSpec, p, n);
    SplitKvWorkspace partials{
        dev.allocate<float>(size_t(size.oAccum) * 4, "o_accum"),
        dev.allocate<float>(size_t(size.lseAccum) * 4, "lse_accum")};
    runs.push_back({n, makeSplitKvParams(*splitSpec, p, {dq, dk, dv, dSplit}, n,
                                         partials)});
  }
  if (!dev.error().empty())
    return makeError(ErrorKind::Driver, dev.error());

  llvm::Error failed = llvm::Error::success();
  auto check = [&](llvm::Error err) {
    if (err && !failed)
      failed = std::move(err);
    else
      llvm::consumeError(std::move(err));
  };
  auto finish = [&] { check(stream->synchronize()); };
  std::vector<std::function<void()>> contenders = {
      [&] { check(single->launch(singleParams, stream->get())), finish(); },
      [&] {
        api::Status s = api::run(*plan, tensors);
        if (!s.ok())
          check(makeError(ErrorKind::Driver, "api::run: " + s.toString()));
        finish();
      }};
  for (SplitRun &r : runs)
    contenders.push_back(
        [&] { check(splitLaunch.launch(r.params, stream->get())), finish(); });
  std::vector<Timing> times = timeInterleaved(contenders, policy);
  if (failed)
    return std::move(failed);
  llvm::consumeError(std::move(failed));
  result.single = times[0];
  result.plan = times[1];

  // Outputs: the single pass is the reference of the row.
  auto download = [&](const void *from, HostTensor &to) -> llvm::Error {
    dev.download(from, to.data(), to.sizeInBytes());
    return dev.error().empty() ? llvm::Error::success()
                               : makeError(ErrorKind::Driver, dev.error());
  };
  if (llvm::Error err = download(dSingle, ref))
    return std::move(err);
  if (llvm::Error err = download(dPlan, o))
    return std::move(err);
  result.planRelL2 = relL2To(o, ref);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (llvm::Error err = splitLaunch.launch(runs[i].params, stream->get()))
      return std::move(err);
    if (llvm::Error err = stream->synchronize())
      return std::move(err);
    if (llvm::Error err = download(dSplit, o))
      return std::move(err);
    result.splits.push_back({runs[i].n, times[2 + i], relL2To(o, ref)});
  }
  return result;
}
