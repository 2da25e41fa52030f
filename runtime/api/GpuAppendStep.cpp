//===- GpuAppendStep.cpp - An append plan's launch on a GPU ---------------===//
#include "runtime/api/GpuAppendStep.h"
#include "runtime/device/PagedKv.h"
#include "runtime/numerics/Rotary.h"

using namespace fmhajit;

llvm::Expected<std::unique_ptr<const GpuAppendStep>>
GpuAppendStep::load(GpuDriver &driver, const KernelSpec &spec,
                    const LoweredAppend &l, KernelCache &cache, void *stream) {
  auto kernel = GpuKernel::load(driver, spec, cache);
  if (!kernel)
    return kernel.takeError();
  GpuBuffer cos, sin;
  if (l.problem.rotary != RotaryForm::None) {
    RotaryTables tables =
        makeRotaryTables(l.problem.cache.rowsPerSequence(),
                         l.problem.resolvedRotaryDim(), l.rotaryBase);
    auto upload = [&](const std::vector<float> &table, const char *what) {
      return GpuBuffer::upload(driver, table.data(),
                               table.size() * sizeof(float), what);
    };
    auto c = upload(tables.cos, "rotary cos");
    if (!c)
      return c.takeError();
    auto s = upload(tables.sin, "rotary sin");
    if (!s)
      return s.takeError();
    cos = std::move(*c);
    sin = std::move(*s);
  }
  return std::unique_ptr<const GpuAppendStep>(new GpuAppendStep(
      std::move(*kernel), l.problem, std::move(cos), std::move(sin), stream));
}

llvm::Error GpuAppendStep::run(const api::AppendTensors &t) const {
  AppendKvBuffers buffers;
  buffers.kNew = t.kNew;
  buffers.vNew = t.vNew;
  buffers.cache = {t.kCache, t.vCache, t.blockTable, t.seqlens};
  buffers.q = t.q;
  buffers.qOut = t.qOut;
  buffers.rotaryCos =
      t.rotaryCos ? t.rotaryCos : static_cast<const float *>(cos.pointer());
  buffers.rotarySin =
      t.rotarySin ? t.rotarySin : static_cast<const float *>(sin.pointer());
  return kernel.launch(makeAppendKvParams(kernel.spec(), problem, buffers),
                       t.stream ? t.stream : stream);
}
