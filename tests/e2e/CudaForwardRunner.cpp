//===- CudaForwardRunner.cpp - The CUDA backend of the e2e harness --------===//
#include "CudaForwardRunner.h"
#include "runtime/device/DeviceForwardData.h"
#include "specs/Errors.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using namespace fmhajit::e2e;

llvm::Expected<std::unique_ptr<CudaForwardRunner>> CudaForwardRunner::create() {
  auto driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  auto stream = GpuStream::create(*driver);
  if (!stream)
    return stream.takeError();
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("fmhajit-cuda-e2e", dir))
    return makeError(ErrorKind::Io,
                     "cannot create a cache directory: " + ec.message());
  CacheConfig config;
  config.dir = std::string(dir);
  auto cache = KernelCache::create(std::move(config));
  if (!cache) {
    llvm::sys::fs::remove_directories(dir);
    return cache.takeError();
  }
  return std::unique_ptr<CudaForwardRunner>(new CudaForwardRunner(
      *driver, std::string(dir), std::move(*cache), std::move(*stream)));
}

CudaForwardRunner::~CudaForwardRunner() {
  llvm::sys::fs::remove_directories(dir);
}

static std::string &reason() {
  static std::string text;
  return text;
}

CudaForwardRunner *CudaForwardRunner::shared() {
  static std::unique_ptr<CudaForwardRunner> runner = [] {
    auto created = create();
    if (created)
      return std::move(*created);
    reason() = llvm::toString(created.takeError());
    return std::unique_ptr<CudaForwardRunner>();
  }();
  if (runner && llvm::errorToBool(runner->driver().makeCurrent()))
    return nullptr;
  return runner.get();
}

const std::string &CudaForwardRunner::unavailableReason() { return reason(); }

llvm::Expected<GpuKernel> CudaForwardRunner::load(const KernelSpec &spec) {
  return GpuKernel::load(cudaDriver, spec, *kernelCache);
}

llvm::Error CudaForwardRunner::operator()(const KernelSpec &spec,
                                          const AttentionProblem &problem,
                                          ForwardData &data) {
  auto kernel = load(spec);
  if (!kernel)
    return kernel.takeError();
  auto device =
      DeviceForwardData::upload(cudaDriver, spec, problem, data.buffers());
  if (!device)
    return device.takeError();
  KernelArgs params = makeKernelArgs(spec, problem, device->buffers());
  auto valuesT = allocatePretransposedValues(cudaDriver, spec, problem);
  if (!valuesT)
    return valuesT.takeError();
  if (*valuesT)
    params.valuesT = (*valuesT)->pointer();
  auto tail = allocateTailSplit(cudaDriver, spec, params);
  if (!tail)
    return tail.takeError();
  if (llvm::Error err = kernel->launch(params, stream.get()))
    return err;
  if (llvm::Error err = stream.synchronize())
    return err;
  return device->download(data.buffers());
}

GpuBuffer fmhajit::e2e::uploadOrFail(CudaDriver &driver, const void *data,
                                     size_t bytes, const char *what) {
  auto buffer = GpuBuffer::upload(driver, data, bytes, what);
  if (!buffer) {
    ADD_FAILURE() << llvm::toString(buffer.takeError());
    return GpuBuffer();
  }
  return std::move(*buffer);
}
