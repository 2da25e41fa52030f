//===- HostKernel.cpp - A compiled, loaded host forward kernel ------------===//
#include "runtime/device/HostKernel.h"
#include "compiler/HostJit.h"
#include "compiler/KernelCompiler.h"
#include "ir/targets/HostTarget.h"
#include "runtime/device/HostExecutor.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/ADT/StringMap.h"
#include <algorithm>

using namespace fmhajit;

static TensorStrides packedStrides(int64_t heads, int64_t dim, int64_t seqlen) {
  return {seqlen * heads * dim, heads * dim, dim};
}

ForwardStrides ForwardStrides::packed(const KernelSpec &spec,
                                      const AttentionProblem &problem) {
  int64_t sq = problem.maxSeqlenQ(), sk = problem.maxSeqlenK();
  // The bias packed [batch, headsQ, seqlenQ, seqlenK]: row is a query.
  TensorStrides bias = {problem.headsQ * sq * sk, sk, sq * sk};
  return {packedStrides(problem.headsQ, spec.d, sq),
          packedStrides(problem.headsKv, spec.d, sk),
          packedStrides(problem.headsKv, spec.headDimV(), sk),
          packedStrides(problem.headsQ, spec.headDimV(), sq),
          bias,
          1};
}

KernelArgs fmhajit::makeKernelArgs(const KernelSpec &spec,
                                   const AttentionProblem &problem,
                                   const ForwardBuffers &buf) {
  return makeKernelArgs(spec, problem, buf,
                        ForwardStrides::packed(spec, problem));
}

KernelArgs fmhajit::makeKernelArgs(const KernelSpec &spec,
                                   const AttentionProblem &problem,
                                   const ForwardBuffers &buf,
                                   const ForwardStrides &strides) {
  KernelArgs p{};
  p.q = buf.q;
  p.k = buf.k;
  p.v = buf.v;
  p.o = buf.o;
  p.lse = buf.lse;
  p.cuSeqlensQ = buf.cuSeqlensQ;
  p.cuSeqlensK = buf.cuSeqlensK;
  p.alibiSlopes = buf.alibiSlopes;
  p.sinks = buf.sinks;
  p.bias = buf.bias;
  p.variantTensors = buf.variantTensors;
  p.biasStrides = strides.bias;
  p.biasKeyStride = strides.biasKey;
  int64_t sq = problem.maxSeqlenQ(), sk = problem.maxSeqlenK();
  p.qStrides = strides.q;
  p.kStrides = strides.k;
  p.vStrides = strides.v;
  p.oStrides = strides.o;
  p.batch = static_cast<int32_t>(problem.batch);
  p.headsQ = static_cast<int32_t>(problem.headsQ);
  p.headsKv = static_cast<int32_t>(problem.headsKv);
  p.seqlenQ = static_cast<int32_t>(sq);
  p.seqlenK = static_cast<int32_t>(sk);
  if (problem.isVarlen()) { // the TMA maps' extents (KernelArgs.def)
    p.totalQ = static_cast<int32_t>(problem.totalQ());
    p.totalK = static_cast<int32_t>(problem.totalK());
  }
  int64_t rows = itemQueryRows(spec, sq, problem.headsQ, problem.headsKv);
  p.numQTiles = static_cast<int32_t>((rows + spec.bm - 1) / spec.bm);
  p.scale = problem.resolvedScale();
  p.vScale = 1;
  p.softcap = problem.softcap;
  p.windowLeft = static_cast<int32_t>(problem.windowLeft);
  p.windowRight = static_cast<int32_t>(problem.windowRight);
  // Dropout's run-time arguments (problem.validate checked p); the API
  // binds each call's (TensorLayouts.h, setDropout).
  p.dropoutSeed = int64_t(problem.dropout.seed);
  p.dropoutOffset = int32_t(problem.dropout.offset);
  p.dropoutThreshold = int32_t(dropoutThreshold(problem.dropout.p));
  p.dropoutScale = dropoutScale(problem.dropout.p);
  return p;
}

int64_t fmhajit::workItems(const KernelSpec &spec, const KernelArgs &p) {
  int64_t tiles =
      int64_t(p.batch) * itemHeads(spec, p.headsQ, p.headsKv) * p.numQTiles;
  if (spec.family == Family::BwdDqDkDv)
    return bwdKeyItems(spec, p.batch, p.headsKv, p.seqlenK) +
           (bwdHasQueryItems(spec) ? tiles : 0);
  if (splitsTail(spec) && p.tailParts > 1) // WorkItem.h
    return tiles + int64_t(p.tailItems) * (p.tailParts - 1);
  if (!hasSplitWorkItems(spec.family))
    return tiles;
  if (p.splitSchedule) // numSplits counts every sequence's parts
    tiles = int64_t(itemHeads(spec, p.headsQ, p.headsKv)) * p.numQTiles;
  return tiles * std::max(p.numSplits, 1);
}

// x86-64-v3/v4 and sapphirerapids code runs only where the CPU has their
// features (AMX's only where the OS lets this process use it).
static llvm::Error checkRunnable(const ArchInfo &arch) {
  if (arch.backend != Backend::Host)
    return makeError(ErrorKind::Usage,
                     "target " + arch.name +
                         " does not run on the host; use --device");
  const llvm::StringMap<bool> &features = hostCpuFeatures();
  auto require = [&](const char *feature) -> llvm::Error {
    if (features.lookup(feature))
      return llvm::Error::success();
    return makeError(ErrorKind::Unsupported,
                     "target " + arch.name + " needs " + feature +
                         ", which this CPU lacks; use target=host");
  };
  if (arch.name == "x86-64-v4")
    return require("avx512f");
  if (arch.name == "x86-64-v3")
    return require("avx2");
  if (arch.name == "sapphirerapids")
    return require("amx-bf16");
  return llvm::Error::success();
}

llvm::Expected<HostKernel> HostKernel::load(const KernelSpec &spec,
                                            KernelCache &cache) {
  if (llvm::Error err = checkRunnable(*findArch(spec.target)))
    return std::move(err);
  auto artifact = compileKernel(spec, cache);
  if (!artifact)
    return artifact.takeError();
  auto jit = HostJit::global();
  if (!jit)
    return jit.takeError();
  auto address = jit->load(encodeName(spec), (*artifact)->bytes());
  if (!address)
    return address.takeError();
  return HostKernel(spec, reinterpret_cast<HostKernelFn>(*address),
                    (*artifact)->origin);
}

void HostKernel::run(const KernelArgs &params, HostExecutor &executor) const {
  executor.run(fn, params, workItems(kernelSpec, params));
}
