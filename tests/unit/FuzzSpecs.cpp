//===- FuzzSpecs.cpp - Random specs for the compile fuzz ------------------===//
#include "tests/unit/FuzzSpecs.h"
#include "specs/ArchTable.h"
#include "specs/Keys.h"
#include "tests/unit/Mutator.h"
#include <vector>

using namespace fmhajit;

namespace {

/// Draws from one spec's generator.
class Draw {
public:
  explicit Draw(uint64_t seed) : rng(seed, {}, {}) {}

  bool chance(unsigned percent) { return rng.below(100) < percent; }
  template <typename T> T pick(const std::vector<T> &values) {
    return values[rng.below(values.size())];
  }
  template <typename E> E pickSpelling(llvm::ArrayRef<Spelling<E>> spellings) {
    return spellings[rng.below(spellings.size())].value;
  }
  unsigned below(unsigned n) { return unsigned(rng.below(n)); }

  /// A tile edge: the default (0), a multiple of \p multiple in 16..256, or
  /// any multiple of 8 up to 264.
  unsigned edge(unsigned multiple) {
    if (chance(25))
      return 0;
    if (chance(90)) {
      unsigned count = 256 / multiple;
      return multiple * (1 + below(count));
    }
    return 8 * (1 + below(33));
  }

private:
  Mutator rng;
};

const PipelineInfo *drawPipeline(Draw &r, const ArchInfo &arch, KernelSpec &s) {
  if (r.chance(15))
    s.pipeline = Pipeline::Auto;
  else if (r.chance(90))
    s.pipeline =
        std::next(arch.pipelines.begin(), r.below(arch.pipelines.size()))
            ->first;
  else
    s.pipeline = r.pickSpelling(pipelineSpellings());
  const PipelineInfo *info = arch.pipeline(s.pipeline);
  if (!info && s.pipeline == Pipeline::Auto)
    info = arch.pipeline(arch.autoOrder.front());
  return info;
}

void drawTypes(Draw &r, const ArchInfo &arch, const PipelineInfo *info,
               KernelSpec &s) {
  s.dtype = info && r.chance(90) ? r.pick(info->dtypes)
                                 : r.pickSpelling(dtypeSpellings());
  if (r.chance(15))
    s.out = r.pickSpelling(dtypeSpellings());
  s.d = r.chance(97) ? r.pick(arch.headDims) : 8 * (1 + r.below(40));
  if (r.chance(25))
    s.dv = r.pick(arch.headDims);
}

// Mostly the implemented families; the backward ones validate but compile
// to an Unsupported error at once, as do dropout and sink on the backward.
Family drawFamily(Draw &r) {
  unsigned p = r.below(100);
  if (p < 40)
    return Family::Fwd;
  if (p < 90) {
    static const std::vector<Family> kInference = {
        Family::FwdSplitKv, Family::FwdPaged, Family::SplitKvCombine,
        Family::AppendKv};
    return r.pick(kInference);
  }
  return r.pickSpelling(familySpellings());
}

void drawFeatures(Draw &r, KernelSpec &s) {
  s.family = drawFamily(r);
  s.mask = r.pickSpelling(maskSpellings());
  s.bias = r.chance(70) ? Bias::None : r.pickSpelling(biasSpellings());
  s.softcap = r.chance(30);
  s.lse = r.chance(40);
  s.varlen = r.chance(25);
  s.dropout = r.chance(3);
  s.sink = r.chance(15);
}

void drawTile(Draw &r, const ArchInfo &arch, const PipelineInfo *info,
              KernelSpec &s) {
  // Now and then a short tile: on wgmma, bm under 64 has keys as the rows.
  s.bm =
      r.chance(8) ? 8 * (1 + r.below(8)) : r.edge(info ? info->bmMultiple : 16);
  s.bn = r.edge(info ? info->bnMultiple : 16);
  if (r.chance(30))
    s.warps = 0;
  else if (r.chance(95))
    s.warps = 1u << r.below(5); // 1..16
  else
    s.warps = 1 + r.below(40);
  if (r.chance(40))
    s.stages = 0;
  else
    s.stages = r.chance(70) ? 1 : 1 + r.below(arch.maxStages + 1);
}

} // namespace

KernelSpec fmhajit::drawFuzzSpec(uint64_t seed, uint64_t index,
                                 unsigned attempt) {
  Draw r(seed ^ (index * 0x9E3779B97F4A7C15ull) ^ (uint64_t(attempt) << 40));
  llvm::ArrayRef<ArchInfo> archs = allArchs();
  const ArchInfo &arch = archs[r.below(archs.size())];
  KernelSpec s;
  s.target = arch.name;
  const PipelineInfo *info = drawPipeline(r, arch, s);
  drawTypes(r, arch, info, s);
  drawFeatures(r, s);
  drawTile(r, arch, info, s);
  return s;
}
