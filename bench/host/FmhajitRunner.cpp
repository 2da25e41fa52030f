//===- FmhajitRunner.cpp - fmhajit's side of a throughput case ------------===//
#include "bench/host/FmhajitRunner.h"
#include "specs/EncodedName.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"

using namespace fmhajit;
using namespace fmhajit::bench;

std::string fmhajit::bench::forwardSpecText(DType dtype, unsigned d,
                                            bool causal) {
  return std::string("family=fwd,dtype=") +
         (dtype == DType::F32 ? "fp32" : "bf16") + ",d=" + std::to_string(d) +
         (causal ? ",mask=causal" : "");
}

llvm::Expected<FmhajitRunner> FmhajitRunner::create(const ForwardCase &config,
                                                    KernelCache &cache) {
  auto parsed =
      parseSpec(forwardSpecText(config.dtype, config.d, config.causal));
  if (!parsed)
    return parsed.takeError();
  auto spec = validateSpec(*parsed);
  if (!spec)
    return spec.takeError();
  AttentionProblem problem = AttentionProblem::forSpec(*spec);
  problem.batch = config.batch;
  problem.headsQ = problem.headsKv = config.heads;
  problem.seqlenQ = problem.seqlenK = config.seqlen;
  if (llvm::Error err = problem.validate(*spec))
    return std::move(err);
  auto kernel = HostKernel::load(*spec, cache);
  if (!kernel)
    return kernel.takeError();
  return FmhajitRunner(std::move(*kernel), std::move(problem),
                       encodeName(*spec));
}

void FmhajitRunner::run(const void *q, const void *k, const void *v, void *o,
                        HostExecutor &executor) const {
  ForwardBuffers buffers{q, k, v, o};
  kernel.run(makeKernelArgs(kernel.spec(), problem, buffers), executor);
}
