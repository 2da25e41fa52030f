//===- ApiTesting.cpp - Running the public API against the reference -----===//
#include "tests/e2e/ApiTesting.h"
#include "runtime/harness/ForwardCase.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <random>

using namespace fmhajit;
using namespace fmhajit::e2e;

const std::string &e2e::apiCacheDir() {
  // Never destroyed: the atexit handler is registered while `dir` is being
  // built, so it runs after dir's destructor would have (a use after free
  // that AddressSanitizer found).
  static const std::string &dir = *new std::string([] {
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueDirectory("fmhajit-api-test", path))
      return std::string();
    std::string text(path);
    std::atexit([] { llvm::sys::fs::remove_directories(apiCacheDir()); });
    return text;
  }());
  return dir;
}

ApiCheck e2e::checkApi(const api::Problem &problem, api::Options options,
                       uint64_t seed,
                       std::vector<std::vector<float>> variantTensors) {
  ApiCheck check;
  std::optional<api::Plan> plan = planChecked(problem, options);
  if (!plan)
    return check;
  check.plan = *plan;
  auto run = harness::ForwardCase::make(problem, plan->target(), seed);
  EXPECT_TRUE(bool(run)) << llvm::toString(run.takeError());
  if (!run)
    return check;
  run->setVariantTensors(std::move(variantTensors));
  llvm::Error err = run->run(*plan);
  EXPECT_FALSE(bool(err)) << llvm::toString(std::move(err));
  check.compare = run->check();
  EXPECT_TRUE(check.compare.pass) << check.compare.summary() << "\n"
                                  << plan->describe();
  return check;
}

std::string fmhajit::e2e::noGpuReason() {
  api::Problem p;
  p.device = api::Device::Cuda;
  api::Options options;
  options.load = false;
  api::Result<api::Plan> plan = api::plan(p, options);
  return plan.ok() ? "" : plan.status().message();
}

std::string fmhajit::e2e::readVariantExample(const std::string &file) {
  const char *root = std::getenv("FMHAJIT_SOURCE_DIR");
  std::string path = std::string(root ? root : FMHAJIT_SOURCE_DIR) +
                     "/examples/variants/" + file;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : "";
}

fmhajit::api::Problem
fmhajit::e2e::denseProblem(int64_t batch, int64_t headsQ, int64_t headsKv,
                           int64_t seqlenQ, int64_t seqlenK, int64_t headDim,
                           api::DType dtype) {
  api::Problem p;
  p.batch = batch, p.headsQ = headsQ, p.headsKv = headsKv;
  p.seqlenQ = seqlenQ, p.seqlenK = seqlenK, p.headDim = headDim;
  p.dtype = dtype;
  return p;
}

std::vector<float> fmhajit::e2e::uniformValues(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (float &x : out)
    x = dist(rng);
  return out;
}
