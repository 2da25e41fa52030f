//===- BackwardRunCommand.cpp - fmhajit run of a backward spec ------------===//
//
// `fmhajit run family=bwd_dq_dk_dv,...`: the forward kernel with the same
// features runs once for O and LSE, then the backward's two host kernels
// (bwd_dot_do_o, then the spec's) on random dO; --check compares dQ, dK and
// dV with the float64 reference (runtime/harness/BackwardCase.h). It drives
// the host kernels through that harness, which the kernels' e2e tests
// share, rather than api::planBackward (docs/api.md, "The backward").
//
//===----------------------------------------------------------------------===//
#include "runtime/harness/BackwardCase.h"
#include "runtime/harness/RunTimer.h"
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

/// The run-time arguments of \p p for the backward kernels of \p spec.
static AttentionProblem backwardProblem(const KernelSpec &spec,
                                        const api::Problem &p) {
  AttentionProblem a = AttentionProblem::forSpec(spec);
  a.batch = p.batch;
  a.headsQ = p.headsQ;
  a.headsKv = p.headsKv ? p.headsKv : p.headsQ;
  a.seqlenQ = p.seqlenQ;
  a.seqlenK = p.seqlenK ? p.seqlenK : p.seqlenQ;
  a.scale = p.scale;
  a.softcap = spec.softcap ? p.softcap : 0;
  if (spec.mask == Mask::Window) {
    a.windowLeft = p.windowLeft;
    a.windowRight = p.windowRight;
  }
  a.alibiSlopes = p.alibiSlopes;
  // --varlen-q/k arrive cumulative; the problem takes lengths.
  auto lengths = [](const std::vector<int32_t> &cu) {
    std::vector<int64_t> lens;
    for (size_t i = 1; i < cu.size(); ++i)
      lens.push_back(cu[i] - cu[i - 1]);
    return lens;
  };
  if (!p.cuSeqlensQ.empty() || !p.cuSeqlensK.empty()) {
    a.seqlensQ = lengths(p.cuSeqlensQ);
    a.seqlensK = p.cuSeqlensK.empty() ? a.seqlensQ : lengths(p.cuSeqlensK);
    a.batch = int64_t(a.seqlensQ.size());
  }
  return a;
}

static void line(llvm::StringRef word, const llvm::Twine &text) {
  llvm::outs() << llvm::left_justify(word, 8) << " " << text << "\n";
}

// The refusals that need no kernel: a GPU device, the flags the spec rules
// out.
static llvm::Error checkRequest(const RunRequest &req) {
  ErrorList errors;
  for (const std::string &mismatch : req.specMismatches)
    errors.add(ErrorKind::Spec, mismatch);
  if (req.problem.device != api::Device::Host)
    errors.add(ErrorKind::Unsupported,
               "the backward runs on the host only so far; drop --device");
  return errors.take();
}

int fmhajit::runBackward(const RunRequest &req) {
  if (llvm::Error err = checkRequest(req))
    return reportErrors(std::move(err));
  auto spec = validateSpec(req.spec);
  if (!spec)
    return reportErrors(spec.takeError());
  auto cache = KernelCache::global();
  if (!cache)
    return reportErrors(cache.takeError());
  unsigned threads = req.options.threads;
  auto c = harness::BackwardCase::make(
      *spec, backwardProblem(*spec, req.problem), req.seed, *cache, threads);
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
