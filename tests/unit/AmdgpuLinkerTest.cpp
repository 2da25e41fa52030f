//===- AmdgpuLinkerTest.cpp - lld, in-process, more than once -------------===//
//
// lld keeps global state between links; linkCodeObject must survive a
// failed link (reporting lld's message) and still link afterwards.
//
//===----------------------------------------------------------------------===//
#include "compiler/AmdgpuLinker.h"
#include "compiler/AmdgpuCodeObject.h"
#include "compiler/KernelCompiler.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "gtest/gtest.h"

using namespace fmhajit;

namespace {

TEST(AmdgpuLinker, BadObjectIsAJitErrorAndLldRunsAgain) {
  auto bad = linkCodeObject("this is not an ELF object");
  ASSERT_FALSE(bool(bad));
  Problems problems = takeProblems(bad.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Jit);
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(
      problems.messages[0].find("lld could not link the AMDGPU code object"),
      std::string::npos)
      << problems.messages[0];

  for (const char *text :
       {"dtype=bf16,d=64,target=gfx90a", "dtype=fp16,d=64,target=gfx1201"}) {
    auto parsed = parseSpec(text);
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    auto spec = validateSpec(*parsed);
    ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
    auto linked = compileToStage(*spec, Stage::Obj);
    ASSERT_TRUE(bool(linked))
        << text << ": " << llvm::toString(linked.takeError());
    auto kernels = readCodeObjectKernels(*linked);
    ASSERT_TRUE(bool(kernels)) << llvm::toString(kernels.takeError());
    EXPECT_EQ(kernels->size(), 1u);
  }
}

} // namespace
