//===- RunCuda.cpp - fmhajit run --device cuda ----------------------------===//
//
// The CUDA path of `fmhajit run`: the same seeded host inputs as the host
// path, copied to the GPU; outputs poisoned with NaN on the device; one
// checked run copied back and compared with the float64 host reference;
// then CUDA-event timing (warm-up, then the median of N launches).
// fwd_splitkv runs as a call does: the split kernel, then (with more than
// one part, --num-splits or chooseNumSplits for the GPU's SMs) the combine
// on the same stream, both inside each timed launch.
//
//===----------------------------------------------------------------------===//
#include "compiler/KernelCache.h"
#include "runtime/CudaDriver.h"
#include "runtime/CudaForwardData.h"
#include "runtime/CudaForwardLaunch.h"
#include "runtime/CudaKernel.h"
#include "runtime/CudaResources.h"
#include "runtime/DeviceCopies.h"
#include "runtime/SplitKv.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/GpuTiming.h"
#include "tools/fmhajit/RunCommand.h"
#include "tools/fmhajit/RunFamilies.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include <algorithm>

using namespace fmhajit;

static void printKernel(const CudaDriver &driver, const CudaKernel &kernel,
                        int64_t blocks, llvm::raw_ostream &os) {
  const CudaLoadStats &load = kernel.loadStats();
  const CudaKernelResources &res = kernel.resources();
  os << "kernel   " << encodeName(kernel.spec()) << "\n"
     << "device   " << driver.describe() << "\n"
     << "load     " << llvm::format("%.2f ms", load.codegenMs + load.driverMs) << " ("
     << originName(load.origin) << ") = codegen "
     << llvm::format("%.2f ms", load.codegenMs) << " + driver "
     << llvm::format("%.2f ms", load.driverMs)
     << (load.moduleReused ? " (module already loaded)\n" : "\n")
     << "launch   " << blocks << " blocks x " << kernel.blockThreads() << " threads, "
     << kernel.sharedBytes() << " B shared, " << res.registers << " registers, "
     << res.localBytes << " B local\n";
}

// One checked run on poisoned device outputs, copied back into \p data.
static llvm::Error runChecked(const CudaForwardLaunch &kernel, const KernelArgs &params,
                              const CudaStream &stream, const CudaForwardData &device,
                              RunData &data) {
  if (llvm::Error err = kernel.launch(params, stream.get()))
    return err;
  if (llvm::Error err = stream.synchronize())
    return err;
  return device.download(data.buffers());
}

int fmhajit::runOnCuda(const RunOptions &opt) {
  auto driver = CudaDriver::get();
  if (!driver)
    return reportErrors(driver.takeError());
  if (std::string note = driver->ptxNote(); !note.empty())
    llvm::WithColor::note() << note << "\n";
  auto cache = KernelCache::global();
  if (!cache)
    return reportErrors(cache.takeError());
  // Before anything is allocated: a problem too large for the GPU would
  // otherwise first exhaust host memory making its inputs.
  if (llvm::Error err = checkFitsOnGpu(*driver, opt.spec, opt.problem))
    return reportErrors(std::move(err));
  auto kernel = CudaKernel::load(opt.spec, *cache);
  if (!kernel)
    return reportErrors(kernel.takeError());
  llvm::raw_ostream &os = llvm::outs();
  bool split = opt.spec.family == Family::FwdSplitKv;
  unsigned parts = split ? resolveNumSplits(opt, opt.problem, driver->device().smCount, os) : 0;
  CudaForwardLaunch launch{std::move(*kernel), std::nullopt};
  if (parts > 1) {
    auto combineSpec = combineSpecFor(opt.spec);
    if (!combineSpec)
      return reportErrors(combineSpec.takeError());
    auto combine = CudaKernel::load(*combineSpec, *cache);
    if (!combine)
      return reportErrors(combine.takeError());
    launch.combine = std::move(*combine);
  }

  RunData data(opt);
  auto device = CudaForwardData::upload(*driver, opt.spec, opt.problem, data.buffers());
  if (!device)
    return reportErrors(device.takeError());
  auto stream = CudaStream::create(*driver);
  if (!stream)
    return reportErrors(stream.takeError());
  // The partials of several parts (one part writes O itself).
  DeviceCopies partials;
  SplitKvWorkspace workspace;
  if (parts > 1) {
    SplitKvWorkspaceSize size = splitKvWorkspaceSize(opt.spec, opt.problem, parts);
    workspace = {partials.allocate<float>(size_t(size.oAccum) * sizeof(float), "o_accum"),
                 partials.allocate<float>(size_t(size.lseAccum) * sizeof(float), "lse_accum")};
    if (!partials.error().empty())
      return reportErrors(makeError(ErrorKind::Driver, partials.error()));
  }
  KernelArgs params = split ? makeSplitKvParams(opt.spec, opt.problem, device->buffers(), parts,
                                               workspace)
                           : makeKernelArgs(opt.spec, opt.problem, device->buffers());
  if (llvm::Error err = runChecked(launch, params, *stream, *device, data))
    return reportErrors(std::move(err));

  printKernel(*driver, launch.kernel, workItems(opt.spec, params), os);
  if (launch.combine)
    os << "combine  " << encodeName(launch.combine->spec()) << "\n";
  bool pass = !opt.check || checkOutputs(opt, data, os);
  if (llvm::Error err = saveOutputs(opt, data, os))
    return reportErrors(std::move(err));
  unsigned ran = 0;
  auto timer = CudaTimer::create(*driver);
  if (!timer)
    return reportErrors(timer.takeError());
  auto ms = medianLaunchMs(launch, params, *stream, *timer, opt.iterations, ran);
  if (!ms)
    return reportErrors(ms.takeError());
  double flops = forwardFlops(opt);
  os << "time     " << llvm::format("%.4f ms", *ms) << " (median of " << ran
     << ", CUDA events)\n"
     << "GFLOPS   " << llvm::format("%.1f", flops / (*ms * 1e6)) << "\n"
     << "TFLOPS   " << llvm::format("%.2f", flops / (*ms * 1e9)) << "\n";
  os.flush();
  return pass ? 0 : 1;
}
