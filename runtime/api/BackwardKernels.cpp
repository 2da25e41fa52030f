//===- BackwardKernels.cpp - The kernels a backward runs beside its grad --===//
#include "runtime/api/BackwardKernels.h"
#include "ir/KernelAbi.h"
#include "specs/Validate.h"

using namespace fmhajit;

/// bwd_dot_do_o or bwd_convert_dq beside \p grad: its dtypes, head dims,
/// varlen and target, the target's default tile.
static llvm::Expected<KernelSpec> helperSpec(const KernelSpec &grad,
                                             Family family) {
  KernelSpec wanted = grad;
  wanted.family = family;
  wanted.mask = fmhajit::Mask::None, wanted.bias = Bias::None;
  wanted.softcap = wanted.deterministic = wanted.dropout = false;
  wanted.head_items = false;
  wanted.bm = wanted.bn = wanted.warps = wanted.stages = 0;
  wanted.pipeline = fmhajit::Pipeline::Auto;
  return validateSpec(wanted);
}

llvm::Expected<std::vector<KernelSpec>>
fmhajit::backwardKernels(const KernelSpec &grad) {
  auto dot = helperSpec(grad, Family::BwdDotDoO);
  if (!dot)
    return dot.takeError();
  std::vector<KernelSpec> specs = {*dot, grad};
  if (!bwdKeyItemsAddDq(grad))
    return specs;
  auto convert = helperSpec(grad, Family::BwdConvertDq);
  if (!convert)
    return convert.takeError();
  specs.push_back(*convert);
  return specs;
}
