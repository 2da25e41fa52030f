//===- BackwardRunCommand.cpp - fmhajit run of a backward spec ------------===//
//
// `fmhajit run family=bwd_dq_dk_dv,...`: the forward kernel with the same
// features runs once for O and LSE, then the backward's kernels
// (bwd_dot_do_o, the spec's, and on a GPU bwd_convert_dq unless
// deterministic=1) on random dO; --check compares dQ, dK and dV with the
// float64 reference. On the host it drives the kernels through
// runtime/harness/BackwardCase.h, which the kernels' e2e tests share; with
// --device cuda through GpuBackwardCase.h, the public API's plans.
//
//===----------------------------------------------------------------------===//
#include "runtime/harness/BackwardCase.h"
#include "runtime/harness/GpuBackwardCase.h"
#include "runtime/harness/RunTimer.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Validate.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/RunOptions.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

using namespace fmhajit;

static void line(llvm::StringRef word, const llvm::Twine &text) {
  llvm::outs() << llvm::left_justify(word, 8) << " " << text << "\n";
}

// The refusals that need no kernel: the flags the spec rules out, a GPU
// other than CUDA's, --save on a GPU.
static llvm::Error checkRequest(const RunRequest &req) {
  ErrorList errors;
  for (const std::string &mismatch : req.specMismatches)
    errors.add(ErrorKind::Spec, mismatch);
  if (req.problem.device == api::Device::Hip)
    errors.add(ErrorKind::Unsupported,
               "the backward runs on the host and CUDA; use --device cuda or "
               "drop --device");
  if (req.problem.device == api::Device::Cuda && req.saveDir)
    errors.add(ErrorKind::Unsupported,
               "--save writes the host backward's bundle; drop --device");
  return errors.take();
}

// The spec on the GPU's target when it names none (target=host).
static llvm::Expected<KernelSpec> gpuSpec(const RunRequest &req) {
  KernelSpec wanted = req.spec;
  if (findArch(wanted.target)->backend == Backend::Host) {
    api::Options o = req.options;
    o.load = false;
    o.kernel.clear(); // the run pins the backward's kernel, not a forward
    api::Result<api::Plan> forward = api::plan(req.problem, o);
    if (!forward)
      return makeError(ErrorKind::Usage, forward.status().message());
    wanted.target = forward->target();
  }
  return validateSpec(wanted);
}

/// The backward's problem, with the run's dropout arguments.
static AttentionProblem problemOf(const KernelSpec &spec,
                                  const RunRequest &req) {
  AttentionProblem a = harness::backwardProblem(spec, req.problem);
  if (req.dropout)
    a.dropout = {req.dropout->p, req.dropout->seed, req.dropout->offset};
  return a;
}

static int runBackwardOnGpu(const RunRequest &req) {
  auto spec = gpuSpec(req);
  if (!spec)
    return reportErrors(spec.takeError());
  auto c = harness::GpuBackwardCase::make(*spec, req.problem,
                                          problemOf(*spec, req), req.seed);
  if (!c)
    return reportErrors(c.takeError());
  for (const api::PlanStep &step : (*c)->plan().steps())
    line("kernel", step.kernel);
  if (llvm::Error err = (*c)->run())
    return reportErrors(std::move(err));
  bool pass = true;
  if (req.check) {
    harness::BackwardCheck verdict = (*c)->check();
    line("check", verdict.summary());
    pass = verdict.pass();
  }
  auto timing = harness::timeRuns(req.problem.device, req.iterations,
                                  [&] { return (*c)->launch(); });
  if (!timing)
    return reportErrors(timing.takeError());
  line("time", llvm::formatv("{0:F3} ms (median of {1}, {2})", timing->ms,
                             timing->runs, timing->clock));
  double flops = harness::backwardFlops(
      *spec, harness::backwardProblem(*spec, req.problem));
  line("TFLOPS", llvm::formatv("{0:F1} (backward = 2.5 x forward)",
                               flops / (timing->ms * 1e9)));
  llvm::outs().flush();
  return pass ? 0 : 1;
}

int fmhajit::runBackward(const RunRequest &req) {
  if (llvm::Error err = checkRequest(req))
    return reportErrors(std::move(err));
  if (req.problem.device != api::Device::Host)
    return runBackwardOnGpu(req);
  auto spec = validateSpec(req.spec);
  if (!spec)
    return reportErrors(spec.takeError());
  auto cache = KernelCache::global();
  if (!cache)
    return reportErrors(cache.takeError());
  unsigned threads = req.options.threads;
  auto c = harness::BackwardCase::make(*spec, problemOf(*spec, req), req.seed,
                                       *cache, threads);
  if (!c)
    return reportErrors(c.takeError());
  line("forward", encodeName((*c)->forwardSpec()) + " (for O and LSE)");
  line("kernel", encodeName((*c)->dotSpec()));
  line("kernel", encodeName((*c)->gradSpec()));
  (*c)->run();
  bool pass = true;
  if (req.check) {
    harness::BackwardCheck verdict = (*c)->check();
    line("check", verdict.summary());
    pass = verdict.pass();
  }
  if (req.saveDir) {
    if (llvm::Error err = (*c)->save(*req.saveDir))
      return reportErrors(std::move(err));
    line("saved", *req.saveDir);
  }
  auto timing = harness::timeRuns(api::Device::Host, req.iterations, [&] {
    (*c)->launch();
    return llvm::Error::success();
  });
  if (!timing)
    return reportErrors(timing.takeError());
  unsigned used =
      threads ? threads : llvm::hardware_concurrency().compute_thread_count();
  line("time",
       llvm::formatv("{0:F3} ms (median of {1}, {2} thread{3})", timing->ms,
                     timing->runs, used, used == 1 ? "" : "s"));
  line("GFLOPS", llvm::formatv("{0:F1} (backward = 2.5 x forward)",
                               (*c)->flops() / (timing->ms * 1e6)));
  llvm::outs().flush();
  return pass ? 0 : 1;
}
