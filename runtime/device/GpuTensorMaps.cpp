//===- GpuTensorMaps.cpp - A TMA kernel's tensor maps, launch by launch ---===//
#include "runtime/device/GpuTensorMaps.h"
#include "runtime/device/GpuDriver.h"
#include "runtime/device/TensorMapBoxes.h"
#include "runtime/device/TuningKnobs.h"
#include "specs/Errors.h"
#include "specs/pipelines/WgmmaLayout.h"
#include <optional>

using namespace fmhajit;

// Any address TMA accepts: encoding reads no memory, and every launch
// replaces it.
static void *const kPlaceholderBase = reinterpret_cast<void *>(uintptr_t(4096));

// The driver's error, prefixed with the map it was about (as
// CudaDriver::encodeTensorMap does).
static llvm::Error aboutMap(const char *tensor, llvm::Error err) {
  if (!err)
    return err;
  return makeError(ErrorKind::Driver, llvm::Twine("the tensor map of ") +
                                          tensor + ": " +
                                          llvm::toString(std::move(err)));
}

// FMHAJIT_TMA_L2_PROMOTION=0, 64, 128 or 256 (read when maps are encoded)
// replaces every map's L2 promotion, for measurement (docs/bench.md).
static std::optional<unsigned> l2PromotionKnob() {
  int64_t bytes = knobFromEnvironment("FMHAJIT_TMA_L2_PROMOTION");
  if (bytes == 0 || bytes == 64 || bytes == 128 || bytes == 256)
    return unsigned(bytes);
  return std::nullopt;
}

llvm::Error fmhajit::encodeTensorMaps(GpuDriver &driver, const KernelSpec &spec,
                                      const KernelArgs &args,
                                      TensorMaps &maps) {
  auto requests = tensorMapRequests(spec, args);
  if (!requests)
    return requests.takeError();
  std::optional<unsigned> promotion = l2PromotionKnob();
  for (unsigned i = 0; i < kNumTensorMaps; ++i) {
    if (promotion)
      (*requests)[i].l2PromotionBytes = *promotion;
    if (llvm::Error err = driver.encodeTensorMap((*requests)[i], maps.map[i]))
      return err;
  }
  return llvm::Error::success();
}

std::optional<TensorMaps> fmhajit::prepareTensorMaps(GpuDriver &driver,
                                                     const KernelSpec &spec,
                                                     const KernelArgs &args) {
  if (!usesTensorMaps(spec))
    return std::nullopt;
  KernelArgs placeholders = args;
  placeholders.q = placeholders.k = placeholders.v = placeholders.valuesT =
      kPlaceholderBase;
  TensorMaps maps;
  if (llvm::Error err = encodeTensorMaps(driver, spec, placeholders, maps)) {
    llvm::consumeError(std::move(err)); // each launch encodes, and says why
    return std::nullopt;
  }
  // A driver that cannot replace addresses leaves the encoding to each
  // launch; trying it on the placeholders costs nothing later.
  if (llvm::Error err =
          driver.replaceTensorMapAddress(maps.map[kQMap], kPlaceholderBase)) {
    llvm::consumeError(std::move(err));
    return std::nullopt;
  }
  return maps;
}

llvm::Error fmhajit::bindTensorMaps(GpuDriver &driver, const KernelSpec &spec,
                                    const TensorMaps &prepared,
                                    const KernelArgs &args, TensorMaps &maps) {
  // tensorMapRequests' order and checks; its strides were checked when the
  // maps were prepared.
  ValuesMapBase values = valuesMapBase(spec, args);
  const char *const names[kNumTensorMaps] = {"q", "k", values.tensor};
  const void *bases[kNumTensorMaps] = {args.q, args.k, values.base};
  for (unsigned i = 0; i < kNumTensorMaps; ++i)
    if (llvm::Error err = checkTensorMapBase(names[i], bases[i]))
      return err;
  maps = prepared;
  for (unsigned i = 0; i < kNumTensorMaps; ++i)
    if (llvm::Error err = aboutMap(
            names[i], driver.replaceTensorMapAddress(maps.map[i], bases[i])))
      return err;
  return llvm::Error::success();
}
