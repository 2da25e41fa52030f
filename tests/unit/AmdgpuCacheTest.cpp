//===- AmdgpuCacheTest.cpp - Code objects through the disk cache ----------===//
//
// An AMDGPU artifact is a linked .hsaco: compiled and linked once, then
// found on disk by a fresh cache (a new process) with identical bytes that
// still parse as the same kernel, and without linking again.
//
//===----------------------------------------------------------------------===//
#include "compiler/AmdgpuCodeObject.h"
#include "compiler/KernelCache.h"
#include "compiler/KernelCompiler.h"
#include "specs/EncodedName.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

class TempDir {
public:
  TempDir() {
    std::error_code ec =
        llvm::sys::fs::createUniqueDirectory("fmhajit-amdgpu-cache", path);
    EXPECT_FALSE(ec) << ec.message();
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string str() const { return std::string(path); }

private:
  llvm::SmallString<128> path;
};

TEST(AmdgpuCache, CodeObjectRoundTripsThroughDisk) {
  TempDir dir;
  auto parsed = parseSpec("dtype=fp16,d=128,mask=causal,target=gfx942");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  auto spec = validateSpec(*parsed);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  std::vector<std::string> warnings;
  CacheConfig config{dir.str(), true,
                     [&](llvm::StringRef w) { warnings.push_back(w.str()); }};

  auto first = KernelCache::create(config);
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  auto compiled = compileKernel(*spec, **first);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  EXPECT_EQ((*compiled)->origin, ArtifactOrigin::Compiled);

  auto second =
      KernelCache::create(config); // a new process, the same directory
  ASSERT_TRUE(bool(second)) << llvm::toString(second.takeError());
  auto found = compileKernel(*spec, **second);
  ASSERT_TRUE(bool(found)) << llvm::toString(found.takeError());
  EXPECT_EQ((*found)->origin, ArtifactOrigin::Disk);
  EXPECT_EQ((*found)->bytes(), (*compiled)->bytes());
  EXPECT_EQ((*second)->stats().compiles, 0u);
  EXPECT_TRUE(warnings.empty());

  auto kernels = readCodeObjectKernels((*found)->bytes());
  ASSERT_TRUE(bool(kernels)) << llvm::toString(kernels.takeError());
  ASSERT_EQ(kernels->size(), 1u);
  EXPECT_EQ(kernels->front().name, encodeName(*spec));
}

} // namespace
