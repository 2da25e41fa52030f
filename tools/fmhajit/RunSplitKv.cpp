//===- RunSplitKv.cpp - fmhajit run for fwd_splitkv and splitkv_combine ---===//
//
// fwd_splitkv runs as a call does: the split kernel, then (with more than
// one part) the combine, on the inputs `run` makes for fwd, checked against
// the same forward reference and saved in the same bundle. The combine
// alone runs on seeded random partials (some parts empty, some rows with
// every part empty) and is checked against referenceCombine.
//
//===----------------------------------------------------------------------===//
#include "runtime/Compare.h"
#include "runtime/FamilyReference.h"
#include "runtime/HostExecutor.h"
#include "runtime/HostTensor.h"
#include "runtime/RunBundle.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/RunCommand.h"
#include "tools/fmhajit/RunFamilies.h"
#include "llvm/Support/Format.h"
#include <chrono>
#include <cmath>
#include <random>

using namespace fmhajit;

int fmhajit::runSplitKv(const RunOptions &opt, KernelCache &cache) {
  llvm::raw_ostream &os = llvm::outs();
  auto kernels = loadSplitKv(opt.spec, cache, os);
  if (!kernels)
    return reportErrors(kernels.takeError());
  HostExecutor executor(opt.threads);
  unsigned n = resolveNumSplits(opt, opt.problem, executor.threads(), os);
  RunData data(opt);
  RunWorkspace workspace(splitKvWorkspaceSize(opt.spec, opt.problem, n));
  KernelArgs params = makeSplitKvParams(opt.spec, opt.problem, data.buffers(), n,
                                       workspace.pointers());
  kernels->run(params, executor); // the checked run: outputs were poisoned
  bool pass = !opt.check || checkOutputs(opt, data, os);
  if (llvm::Error err = saveOutputs(opt, data, os))
    return reportErrors(std::move(err));
  printTiming(opt, [&] { kernels->run(params, executor); }, executor.threads(),
              forwardFlops(opt), 0, os);
  return pass ? 0 : 1;
}

namespace {
/// Seeded partials: normal O rows; LSEs normal(0, 4), -inf where (row +
/// split) % 3 == 0 (an empty part), and -inf in every part of each 7th row
/// (a row no part saw a key for).
struct CombineData {
  std::vector<float> oAccum, lseAccum;
  HostTensor o;
  std::vector<float> lse;

  CombineData(const RunOptions &opt, unsigned n, int64_t rows)
      : oAccum(int64_t(n) * rows * opt.spec.headDimV()), lseAccum(int64_t(n) * rows),
        o(opt.spec.outType(), numElements(opt.problem.oShape())) {
    std::mt19937_64 rng(opt.seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float &x : oAccum)
      x = normal(rng);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t r = 0; r < rows; ++r) {
        bool empty = (r + s) % 3 == 0 || r % 7 == 3;
        lseAccum[s * rows + r] = empty ? -INFINITY : 4.0f * normal(rng);
      }
    o.poison();
    if (opt.spec.lse)
      lse.assign(rows, NAN);
  }
};
} // namespace

int fmhajit::runCombine(const RunOptions &opt, KernelCache &cache) {
  llvm::raw_ostream &os = llvm::outs();
  auto kernel = HostKernel::load(opt.spec, cache);
  if (!kernel)
    return reportErrors(kernel.takeError());
  os << "kernel   " << encodeName(opt.spec) << " (" << originName(kernel->origin()) << ")\n";
  unsigned n = opt.family.numSplits ? opt.family.numSplits : 4;
  os << "splits   " << n << (opt.family.numSplits ? " (--num-splits)\n" : " (default)\n");
  int64_t rows = opt.problem.headsQ * opt.problem.totalQ();
  CombineData data(opt, n, rows);
  std::vector<int32_t> cuQ = opt.problem.cuSeqlensQ();
  ForwardBuffers buffers{nullptr, nullptr, nullptr, data.o.data()};
  buffers.lse = data.lse.empty() ? nullptr : data.lse.data();
  buffers.cuSeqlensQ = opt.spec.varlen ? cuQ.data() : nullptr;
  KernelArgs params = makeKernelArgs(opt.spec, opt.problem, buffers);
  setSplits(params, n, {data.oAccum.data(), data.lseAccum.data()});
  HostExecutor executor(opt.threads);
  kernel->run(params, executor);
  bool pass = true;
  if (opt.check) {
    ReferenceOutput ref = referenceCombine(opt.problem, n, data.oAccum, data.lseAccum);
    CompareResult r = compareOutputs(data.o.toFloat(), ref.o, data.lse,
                                     opt.spec.lse ? ref.lse : std::vector<double>(),
                                     opt.spec.outType());
    os << "check    " << r.summary() << "\n";
    pass = r.pass;
  }
  if (opt.saveDir) {
    std::vector<float> o = data.o.toFloat();
    int64_t dv = opt.spec.headDimV();
    std::vector<BundleArray> arrays = {{"o_accum.npy", data.oAccum, {int64_t(n), rows, dv}},
                                       {"lse_accum.npy", data.lseAccum, {int64_t(n), rows}},
                                       {"o.npy", o, opt.problem.oShape()}};
    if (opt.spec.lse)
      arrays.push_back({"lse.npy", data.lse, opt.problem.lseShape()});
    auto meta = familyMetadata(opt);
    meta.emplace_back("num_splits", int64_t(n));
    if (llvm::Error err = writeBundle(*opt.saveDir, arrays, meta))
      return reportErrors(std::move(err));
    os << "saved    " << *opt.saveDir << "\n";
  }
  double bytes = 4.0 * n * rows * (opt.spec.headDimV() + 1) +
                 double(data.o.sizeInBytes()) + 4.0 * data.lse.size();
  printTiming(opt, [&] { kernel->run(params, executor); }, executor.threads(), 0, bytes, os);
  return pass ? 0 : 1;
}
