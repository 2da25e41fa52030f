//===- RunCommand.cpp - fmhajit run: compile, run, time, check, save ------===//
#include "compiler/KernelCache.h"
#include "runtime/Compare.h"
#include "runtime/HostExecutor.h"
#include "runtime/HostKernel.h"
#include "runtime/HostTensor.h"
#include "runtime/Reference.h"
#include "runtime/RunBundle.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/RunCommand.h"
#include "tools/fmhajit/RunFamilies.h"
#include "tools/fmhajit/RunOptions.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <cmath>

using namespace fmhajit;
using Clock = std::chrono::steady_clock;

static double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

RunData::RunData(const RunOptions &opt)
    : q(opt.spec.dtype, numElements(opt.problem.qShape())),
      k(opt.spec.dtype, numElements(opt.problem.kShape())),
      v(opt.spec.dtype, numElements(opt.problem.vShape())),
      o(opt.spec.outType(), numElements(opt.problem.oShape())) {
  q.fillNormal(opt.seed);
  k.fillNormal(opt.seed + 1);
  v.fillNormal(opt.seed + 2);
  poison(opt);
  if (opt.problem.isVarlen()) {
    cuQ = opt.problem.cuSeqlensQ();
    cuK = opt.problem.cuSeqlensK();
  }
  if (opt.spec.bias == Bias::Alibi)
    slopes = opt.problem.resolvedAlibiSlopes();
}

void RunData::poison(const RunOptions &opt) {
  o.poison();
  if (opt.spec.lse)
    lse.assign(numElements(opt.problem.lseShape()), NAN);
}

ForwardBuffers RunData::buffers() {
  return {q.data(), k.data(), v.data(), o.data(), lse.empty() ? nullptr : lse.data(),
          cuQ.empty() ? nullptr : cuQ.data(), cuK.empty() ? nullptr : cuK.data(),
          slopes.empty() ? nullptr : slopes.data()};
}

// 2*(d + dv) per visible (query, key) pair.
double fmhajit::forwardFlops(const RunOptions &opt) {
  const AttentionProblem &p = opt.problem;
  double pairs = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    double sq = p.seqlenQOf(b), sk = p.seqlenKOf(b);
    if (opt.spec.mask == Mask::Window) {
      for (int64_t i = 0; i < sq; ++i) {
        int64_t diag = i + int64_t(sk) - int64_t(sq);
        int64_t lo = p.windowLeft < 0 ? 0 : std::max<int64_t>(0, diag - p.windowLeft);
        int64_t hi = p.windowRight < 0 ? int64_t(sk) - 1 : std::min<int64_t>(int64_t(sk) - 1, diag + p.windowRight);
        pairs += std::max<int64_t>(0, hi - lo + 1);
      }
    } else {
      pairs += sq * sk * (opt.spec.mask == Mask::None ? 1.0 : 0.5);
    }
  }
  return 2.0 * (opt.spec.d + opt.spec.headDimV()) * pairs * p.headsQ;
}

double fmhajit::medianCallMs(llvm::function_ref<void()> call, unsigned iterations,
                             unsigned &ran) {
  std::vector<double> times;
  Clock::time_point begin = Clock::now();
  for (unsigned i = 0; iterations ? i < iterations : (i < 3 || msSince(begin) < 200); ++i) {
    Clock::time_point t = Clock::now();
    call();
    times.push_back(msSince(t));
  }
  ran = static_cast<unsigned>(times.size());
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

bool fmhajit::checkOutputs(const RunOptions &opt, RunData &data, llvm::raw_ostream &os) {
  ReferenceOutput ref = referenceForward(opt.spec, opt.problem, data.q.toFloat(),
                                         data.k.toFloat(), data.v.toFloat());
  CompareResult result = compareOutputs(data.o.toFloat(), ref.o, data.lse, ref.lse,
                                        opt.spec.outType());
  os << "check    " << result.summary() << "\n";
  return result.pass;
}

llvm::Error fmhajit::saveOutputs(const RunOptions &opt, RunData &data, llvm::raw_ostream &os) {
  if (!opt.saveDir)
    return llvm::Error::success();
  std::vector<float> q = data.q.toFloat(), k = data.k.toFloat(), v = data.v.toFloat(),
                     o = data.o.toFloat();
  if (llvm::Error err =
          writeRunBundle(*opt.saveDir, opt.spec, opt.problem, {q, k, v, o, data.lse}))
    return err;
  os << "saved    " << *opt.saveDir << "\n";
  return llvm::Error::success();
}

int fmhajit::runCommand(llvm::ArrayRef<const char *> argv) {
  auto opt = parseRunOptions(argv);
  if (!opt)
    return reportErrors(opt.takeError());
  if (opt->spec.family != Family::Fwd)
    return runFamily(*opt);
  if (opt->device == "cuda")
    return runOnCuda(*opt);
  if (opt->device == "hip")
    return runOnHip(*opt);
  if (opt->device != "host")
    return reportErrors(makeError(ErrorKind::Unsupported,
                                  "--device " + opt->device + " is not available in this build yet"));
  auto cache = KernelCache::global();
  if (!cache)
    return reportErrors(cache.takeError());
  Clock::time_point loadStart = Clock::now();
  auto kernel = HostKernel::load(opt->spec, *cache);
  if (!kernel)
    return reportErrors(kernel.takeError());
  double loadMs = msSince(loadStart);

  RunData data(*opt);
  KernelArgs params = makeKernelArgs(opt->spec, opt->problem, data.buffers());
  HostExecutor executor(opt->threads);
  kernel->run(params, executor); // the checked run: outputs were poisoned
  llvm::raw_ostream &os = llvm::outs();
  os << "kernel   " << encodeName(opt->spec) << "\n"
     << "load     " << llvm::format("%.2f ms", loadMs) << " (" << originName(kernel->origin())
     << ")\n";
  bool pass = !opt->check || checkOutputs(*opt, data, os);
  if (llvm::Error err = saveOutputs(*opt, data, os))
    return reportErrors(std::move(err));
  unsigned ran = 0;
  double ms = medianCallMs([&] { kernel->run(params, executor); }, opt->iterations, ran);
  os << "time     " << llvm::format("%.3f ms", ms) << " (median of " << ran << ", "
     << executor.threads() << (executor.threads() == 1 ? " thread)" : " threads)") << "\n"
     << "GFLOPS   " << llvm::format("%.1f", forwardFlops(*opt) / (ms * 1e6)) << "\n";
  os.flush();
  return pass ? 0 : 1;
}
