//===- RunHip.cpp - fmhajit run --device hip ------------------------------===//
//
// The HIP path of `fmhajit run`, the same steps as the CUDA path: seeded
// host inputs copied to the GPU, outputs poisoned with NaN on the device,
// one checked run copied back and compared with the float64 host
// reference, then HIP-event timing (GpuTiming.h). The spec names its AMD
// target (rocminfo lists the GPU's gfx name): HIP has no stable query for
// it that fmhajit could read without ROCm's headers.
//
//===----------------------------------------------------------------------===//
#include "compiler/KernelCache.h"
#include "runtime/DeviceForwardData.h"
#include "runtime/HipKernel.h"
#include "runtime/HipResources.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/GpuTiming.h"
#include "tools/fmhajit/RunCommand.h"
#include "llvm/Support/Format.h"

using namespace fmhajit;

using HipForwardData = DeviceForwardData<HipRuntime, HipBuffer>;

static void printKernel(const HipRuntime &hip, const HipKernel &kernel, int64_t blocks,
                        llvm::raw_ostream &os) {
  const HipLoadStats &load = kernel.loadStats();
  const CodeObjectKernel &res = kernel.resources();
  os << "kernel   " << encodeName(kernel.spec()) << "\n"
     << "device   " << hip.describe() << "\n"
     << "load     " << llvm::format("%.2f ms", load.codegenMs + load.loaderMs) << " ("
     << originName(load.origin) << ") = codegen " << llvm::format("%.2f ms", load.codegenMs)
     << " + loader " << llvm::format("%.2f ms", load.loaderMs)
     << (load.moduleReused ? " (module already loaded)\n" : "\n")
     << "launch   " << blocks << " workgroups x " << kernel.blockThreads() << " threads (wave"
     << res.wavefrontSize << "), " << res.groupSegmentFixedSize << " B LDS, " << res.vgprCount
     << " VGPRs, " << res.agprCount << " AGPRs, " << res.sgprCount << " SGPRs, "
     << res.privateSegmentFixedSize << " B scratch\n";
}


static llvm::Error checkAmdTarget(const KernelSpec &spec) {
  if (findArch(spec.target)->backend == Backend::Amdgpu)
    return llvm::Error::success();
  return makeError(ErrorKind::Usage, "--device hip runs AMD targets: add target=gfx90a, gfx942, "
                                     "gfx950, gfx1100 or gfx1201 to the spec (rocminfo names "
                                     "this GPU's)");
}

int fmhajit::runOnHip(const RunOptions &opt) {
  if (llvm::Error err = checkAmdTarget(opt.spec))
    return reportErrors(std::move(err));
  auto hip = HipRuntime::get();
  if (!hip)
    return reportErrors(hip.takeError());
  // Before anything is allocated: a problem too large for the GPU would
  // otherwise first exhaust host memory making its inputs.
  if (llvm::Error err = checkForwardFits(opt.spec, opt.problem, hip->device().totalMemory,
                                         hip->device().name))
    return reportErrors(std::move(err));
  auto cache = KernelCache::global();
  if (!cache)
    return reportErrors(cache.takeError());
  auto kernel = HipKernel::load(opt.spec, *cache);
  if (!kernel)
    return reportErrors(kernel.takeError());

  RunData data(opt);
  auto device = HipForwardData::upload(*hip, opt.spec, opt.problem, data.buffers());
  if (!device)
    return reportErrors(device.takeError());
  auto stream = HipStream::create(*hip);
  auto timer = HipTimer::create(*hip);
  if (!stream || !timer)
    return reportErrors(llvm::joinErrors(stream.takeError(), timer.takeError()));
  KernelArgs params = makeKernelArgs(opt.spec, opt.problem, device->buffers());
  if (llvm::Error err = kernel->launch(params, stream->get()))
    return reportErrors(std::move(err));
  if (llvm::Error err = stream->synchronize())
    return reportErrors(std::move(err));
  if (llvm::Error err = device->download(data.buffers()))
    return reportErrors(std::move(err));

  llvm::raw_ostream &os = llvm::outs();
  printKernel(*hip, *kernel, workItems(params), os);
  bool pass = !opt.check || checkOutputs(opt, data, os);
  if (llvm::Error err = saveOutputs(opt, data, os))
    return reportErrors(std::move(err));
  unsigned ran = 0;
  auto ms = medianLaunchMs(*kernel, params, *stream, *timer, opt.iterations, ran);
  if (!ms)
    return reportErrors(ms.takeError());
  double flops = forwardFlops(opt);
  os << "time     " << llvm::format("%.4f ms", *ms) << " (median of " << ran
     << ", HIP events)\n"
     << "GFLOPS   " << llvm::format("%.1f", flops / (*ms * 1e6)) << "\n"
     << "TFLOPS   " << llvm::format("%.2f", flops / (*ms * 1e9)) << "\n";
  os.flush();
  return pass ? 0 : 1;
}
