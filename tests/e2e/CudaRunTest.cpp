//===- CudaRunTest.cpp - `fmhajit run --device cuda --check` --------------===//
//
// The command line on the GPU: `fmhajit run SPEC --device cuda --check`
// compiles, runs and checks a kernel against the float64 reference, as a
// user would. Skipped without a GPU and driver (CudaForwardRunner).
//
//===----------------------------------------------------------------------===//
#include "../unit/ScopedEnv.h"
#include "CudaForwardRunner.h"
#include "specs/EncodedName.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "gtest/gtest.h"

using namespace fmhajit;
using namespace fmhajit::e2e;

// The CLI under test: $FMHAJIT_BINARY where the tests travel (the GPU
// machine), else the one this build made.
static const char *fmhajitBinary() {
  const char *env = getenv("FMHAJIT_BINARY");
  return env && *env ? env : FMHAJIT_BINARY;
}

namespace {

/// Runs the fmhajit binary with \p args; returns its exit code and output.
std::pair<int, std::string> runFmhajit(std::vector<std::string> args) {
  llvm::SmallString<128> out;
  llvm::sys::fs::createTemporaryFile("fmhajit-cuda-run", "txt", out);
  args.insert(args.begin(), fmhajitBinary());
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(out), llvm::StringRef(out)};
  int rc =
      llvm::sys::ExecuteAndWait(fmhajitBinary(), argv, std::nullopt, redirects);
  auto text = llvm::MemoryBuffer::getFile(out);
  llvm::sys::fs::remove(out);
  return {rc, text ? (*text)->getBuffer().str() : ""};
}

/// `fmhajit run SPEC FLAGS... --device cuda --check --iters 2` for \p args
/// = {SPEC, FLAGS...}: exits 0 and says "check    PASS".
void expectCheckPasses(std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  args.insert(args.end(), {"--device", "cuda", "--check", "--iters", "2"});
  auto [rc, text] = runFmhajit(args);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("check    PASS"), std::string::npos) << text;
}

TEST(CudaRun, ChecksAndTimesOnTheGpu) {
  if (!CudaForwardRunner::shared())
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  auto [rc, text] = runFmhajit(
      {"run", "family=fwd,dtype=bf16,d=128,mask=causal,lse=1,target=sm_90a",
       "--device", "cuda", "--batch", "2", "--heads", "4", "--seqlen-q", "333",
       "--check", "--iters", "5"});
  EXPECT_EQ(rc, 0) << text;
  for (const char *line :
       {"kernel   fmha_fwd_bf16_d128_causal", "device   ", "load     ",
        "launch   ", "check    PASS", "time     ", "GFLOPS   ", "TFLOPS   "})
    EXPECT_NE(text.find(line), std::string::npos) << "no '" << line << "' in:\n"
                                                  << text;
}

// Sinks from the CLI (seeded per head, uploaded by the harness): fp8 on the
// TMA ring, whose l carries P's 2^8 shift from the sink on; split-KV with
// five parts and its combine; bf16 with rows that see no key (LSE = sink).
TEST(CudaRun, SinksCheckOnTheGpu) {
  if (!CudaForwardRunner::shared())
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  for (const std::vector<std::string> &args :
       {std::vector<std::string>{"family=fwd,dtype=fp8_e4m3,d=128,mask=causal,"
                                 "lse=1,sink=1,target=sm_90a",
                                 "--batch", "2", "--heads", "8", "--heads-kv",
                                 "2", "--seqlen-q", "777"},
        std::vector<std::string>{
            "family=fwd_splitkv,dtype=bf16,d=128,lse=1,sink=1,target=sm_90a",
            "--heads", "8", "--heads-kv", "1", "--seqlen-q", "1", "--seqlen-k",
            "9000", "--num-splits", "5"},
        std::vector<std::string>{
            "family=fwd,dtype=bf16,d=128,mask=causal_br,lse=1,sink=1,"
            "target=sm_90a",
            "--batch", "2", "--heads", "4", "--seqlen-q", "333", "--seqlen-k",
            "200"}}) {
    expectCheckPasses(args);
  }
}

// fp8 from the CLI, through the public API: the harness quantizes Q, K and
// V with descale factors 0.5, 0.25 and 2 (a kernel that drops or swaps one
// fails the check), for the forward and for split-KV with its combine.
TEST(CudaRun, Fp8WithDescalesChecksOnTheGpu) {
  if (!CudaForwardRunner::shared())
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  for (const std::vector<std::string> &args :
       {std::vector<std::string>{
            "family=fwd,dtype=fp8_e4m3,d=128,mask=causal,lse=1,target=sm_90a",
            "--batch", "2", "--heads", "8", "--heads-kv", "2", "--seqlen-q",
            "777"},
        std::vector<std::string>{"family=fwd,dtype=fp8_e4m3,d=256,mask=causal,"
                                 "lse=1,v_pretranspose=1,target=sm_90a",
                                 "--batch", "2", "--heads", "8", "--heads-kv",
                                 "2", "--seqlen-q", "777"},
        std::vector<std::string>{
            "family=fwd_splitkv,dtype=fp8_e5m2,d=128,lse=1,target=sm_90a",
            "--heads", "8", "--heads-kv", "1", "--seqlen-q", "1", "--seqlen-k",
            "9000", "--num-splits", "5"}}) {
    expectCheckPasses(args);
  }
}

// pack_gqa on the TMA ring from the CLI: sinks (one per query head, so each
// packed row reads its own) in split-KV decode with five parts, and fp8
// split-KV with the harness's descale factors (0.5, 0.25 and 2).
TEST(CudaRun, PackedRingChecksOnTheGpu) {
  if (!CudaForwardRunner::shared())
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  for (const std::vector<std::string> &args :
       {std::vector<std::string>{
            "family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,lse=1,sink=1,"
            "pack_gqa=1,pipeline=wgmma,bm=64,bn=128,warps=4,stages=2,"
            "target=sm_90a",
            "--heads", "32", "--heads-kv", "4", "--seqlen-q", "2", "--seqlen-k",
            "9000", "--num-splits", "5"},
        std::vector<std::string>{
            "family=fwd_splitkv,dtype=fp8_e4m3,d=128,mask=causal_br,lse=1,"
            "pack_gqa=1,stages=2,target=sm_90a",
            "--batch", "2", "--heads", "16", "--heads-kv", "2", "--seqlen-q",
            "1", "--seqlen-k", "5000", "--num-splits", "3"}}) {
    expectCheckPasses(args);
  }
}

// fwd_splitkv from the CLI: the split kernel and the combine on the GPU, the
// part count chosen for its SMs or given, checked against the reference.
TEST(CudaRun, SplitKvChecksOnTheGpu) {
  if (!CudaForwardRunner::shared())
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  for (const char *parts : {"", "3"}) {
    std::vector<std::string> args = {
        "run",        "family=fwd_splitkv,dtype=bf16,d=128,lse=1",
        "--device",   "cuda",
        "--heads",    "8",
        "--heads-kv", "1",
        "--seqlen-q", "1",
        "--seqlen-k", "5000",
        "--check",    "--iters",
        "3"};
    if (*parts)
      args.insert(args.end(), {"--num-splits", parts});
    auto [rc, text] = runFmhajit(args);
    EXPECT_EQ(rc, 0) << text;
    std::string splits = *parts ? "splits   3 (--num-splits)" : " SMs)";
    for (const std::string &line :
         {std::string("kernel   fmha_fwdsplitkv_bf16_d128_lse"), splits,
          std::string("combine  fmha_splitkvcombine_"),
          std::string("check    PASS"), std::string("time     ")})
      EXPECT_NE(text.find(line), std::string::npos)
          << "no '" << line << "' in:\n"
          << text;
  }
}

// No target in the spec: the GPU's own target, defaults resolved for it.
TEST(CudaRun, PicksTheDeviceTarget) {
  CudaForwardRunner *runner = CudaForwardRunner::shared();
  if (!runner)
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  auto [rc, text] = runFmhajit(
      {"run", "family=fwd,dtype=fp16,d=64,varlen=1", "--device", "cuda",
       "--varlen-q", "5,100", "--varlen-k", "77,3", "--check", "--iters", "2"});
  EXPECT_EQ(rc, 0) << text;
  const std::optional<std::string> &target = runner->driver().device().target;
  ASSERT_TRUE(target.has_value());
  EXPECT_NE(text.find(targetToken(*target) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("check    PASS"), std::string::npos) << text;
}

// `cache warm --load` into fresh caches (the driver's too), its loads in
// child processes: a later run of a warmed kernel finds it on disk, loads
// the driver's machine code from its cache, and checks.
TEST(CudaRun, WarmLoadFillsBothCaches) {
  if (!CudaForwardRunner::shared())
    GTEST_SKIP() << CudaForwardRunner::unavailableReason();
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("fmhajit-warm-load", dir));
  fmhajit::ScopedEnv env; // the children's caches
  env.set("FMHAJIT_CACHE_DIR", (dir + "/fmhajit").str().c_str());
  env.set("CUDA_CACHE_PATH", (dir + "/driver").str().c_str());
  auto [rc, text] = runFmhajit(
      {"cache", "warm", "--profile", "smoke", "--target", "sm_90a", "--load"});
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("loaded 34 kernels into the CUDA driver"),
            std::string::npos)
      << text;
  auto [runRc, run] = runFmhajit(
      {"run", "family=fwd,dtype=bf16,d=64,mask=causal,target=sm_90a",
       "--device", "cuda", "--seqlen-q", "300", "--check", "--iters", "1"});
  EXPECT_EQ(runRc, 0) << run;
  EXPECT_NE(run.find("(disk)"), std::string::npos) << run;
  EXPECT_NE(run.find("check    PASS"), std::string::npos) << run;
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
