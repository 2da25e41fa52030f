//===- HostForwardErrorsTest.cpp - What a host forward kernel refuses -----===//
//
// Specs the model accepts but the recipe does not implement fail when the
// kernel is loaded, with an ErrorKind::Unsupported error naming the feature
// (and leave nothing in the cache); run-time problems the kernel cannot run
// are refused by AttentionProblem::validate before anything runs.
//
//===----------------------------------------------------------------------===//
#include "ForwardHarness.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringRef.h"
#include "gtest/gtest.h"
#include <functional>

using namespace fmhajit;
using namespace fmhajit::e2e;

namespace {

//===-- Unimplemented features --------------------------------------------===//

struct UnsupportedCase {
  const char *spec;
  std::vector<const char *> features; ///< each must be named by one message
};

class UnimplementedFeature : public ::testing::TestWithParam<UnsupportedCase> {
};

TEST_P(UnimplementedFeature, FailsAtLoadNamingTheFeature) {
  std::optional<KernelSpec> spec = resolveSpec(GetParam().spec);
  ASSERT_TRUE(spec);
  HostForwardRunner *runner = HostForwardRunner::shared();
  ASSERT_TRUE(runner);
  llvm::Expected<DiskStats> before = runner->cache().diskStats();
  ASSERT_TRUE(bool(before)) << llvm::toString(before.takeError());
  llvm::Expected<HostKernel> kernel = HostKernel::load(*spec, runner->cache());
  ASSERT_FALSE(bool(kernel)) << GetParam().spec << " loaded";
  Problems problems = takeProblems(kernel.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Unsupported);
  ASSERT_EQ(problems.messages.size(), GetParam().features.size());
  for (size_t i = 0; i < problems.messages.size(); ++i)
    EXPECT_NE(problems.messages[i].find(GetParam().features[i]),
              std::string::npos)
        << "message '" << problems.messages[i] << "' does not name "
        << GetParam().features[i];
  // Compile errors are not cached: no file was written.
  llvm::Expected<DiskStats> after = runner->cache().diskStats();
  ASSERT_TRUE(bool(after)) << llvm::toString(after.takeError());
  EXPECT_EQ(after->files, before->files);
}

INSTANTIATE_TEST_SUITE_P(
    HostForward, UnimplementedFeature,
    ::testing::Values(
        // dropout=1 stood here until it was implemented (HostDropoutTest;
        // fp8 refuses it: tests/lit/nvptx/dropout.test).
        // sink=1 runs in the forward families (HostSinkTest.cpp); the
        // backward has no gradient for the sinks.
        UnsupportedCase{"family=bwd_dq_dk_dv,dtype=fp32,d=64,sink=1",
                        {"sink=1 on family=bwd_dq_dk_dv"}},
        // bias=elementwise runs in fwd and fwd_splitkv (HostBiasTest.cpp);
        // the backward, varlen and fwd_paged have no form of it yet.
        UnsupportedCase{"family=bwd_dq_dk_dv,dtype=fp32,d=64,"
                        "bias=elementwise",
                        {"bias=elementwise on family=bwd_dq_dk_dv"}},
        UnsupportedCase{"family=fwd,dtype=fp16,d=64,bias=elementwise,"
                        "varlen=1",
                        {"bias=elementwise with varlen=1"}},
        UnsupportedCase{"family=fwd_paged,dtype=bf16,d=64,bias=elementwise",
                        {"bias=elementwise on family=fwd_paged"}},
        // family=fwd_splitkv, then family=bwd_dq_dk_dv stood here until
        // they were implemented (GPU targets refuse the backward:
        // tests/lit/ir/bwd-unsupported.test).
        UnsupportedCase{"family=bwd_convert_dq,dtype=bf16,d=128",
                        {"family=bwd_convert_dq"}},
        UnsupportedCase{"family=bwd_dq_dk_dv,dtype=bf16,d=64,dropout=1,"
                        "sink=1,bias=elementwise,varlen=1",
                        {"sink=1 on family=bwd_dq_dk_dv",
                         "bias=elementwise on family=bwd_dq_dk_dv",
                         "bias=elementwise with varlen=1"}}),
    [](const ::testing::TestParamInfo<UnsupportedCase> &info) {
      return testName(info.param.features.size() > 1
                          ? "several"
                          : std::string(info.param.features[0]));
    });

//===-- Bad run-time problems ---------------------------------------------===//

struct BadProblem {
  const char *label;
  const char *spec;
  std::function<void(AttentionProblem &)> spoil;
  const char *message; ///< a part of the one expected message
};

class BadRunTimeProblem : public ::testing::TestWithParam<BadProblem> {};

// validate() refuses the problem with one Usage message, and checkForward
// never calls the backend.
TEST_P(BadRunTimeProblem, IsRefusedBeforeRunning) {
  const BadProblem &c = GetParam();
  std::optional<KernelSpec> spec = resolveSpec(c.spec);
  ASSERT_TRUE(spec);
  AttentionProblem problem = makeProblem(*spec, Shape::dense(1, 4, 4, 64, 64));
  c.spoil(problem);
  bool ran = false;
  llvm::Expected<ForwardCheck> check = checkForward(
      *spec, problem, 1,
      [&](const KernelSpec &, const AttentionProblem &, ForwardData &) {
        ran = true;
        return llvm::Error::success();
      });
  ASSERT_FALSE(bool(check));
  EXPECT_FALSE(ran);
  Problems problems = takeProblems(check.takeError());
  EXPECT_EQ(problems.kind, ErrorKind::Usage);
  ASSERT_EQ(problems.messages.size(), 1u);
  EXPECT_NE(problems.messages[0].find(c.message), std::string::npos)
      << problems.messages[0];
}

const char *const kPlain = "family=fwd,dtype=bf16,d=64";
const char *const kVarlen = "family=fwd,dtype=bf16,d=64,varlen=1";

INSTANTIATE_TEST_SUITE_P(
    HostForward, BadRunTimeProblem,
    ::testing::Values(
        BadProblem{"heads_not_multiple", kPlain,
                   [](AttentionProblem &p) { p.headsQ = 3, p.headsKv = 2; },
                   "heads_q 3 is not a multiple of heads_kv 2"},
        BadProblem{"window_on_causal", "family=fwd,dtype=bf16,d=64,mask=causal",
                   [](AttentionProblem &p) { p.windowLeft = 16; },
                   "needs a spec with mask=window"},
        BadProblem{"window_below_minus_one",
                   "family=fwd,dtype=bf16,d=64,mask=window",
                   [](AttentionProblem &p) { p.windowRight = -2; },
                   "each side is a key count >= 0, or -1"},
        BadProblem{"bias_values_wrong_size",
                   "family=fwd,dtype=fp32,d=64,bias=elementwise",
                   [](AttentionProblem &p) { p.bias = {1, 2, 3}; },
                   "got 3 bias values for 16384"},
        BadProblem{"bias_values_without_bias", kPlain,
                   [](AttentionProblem &p) { p.bias = {1}; },
                   "bias values need a spec with bias=elementwise"},
        BadProblem{"negative_seqlen", kPlain,
                   [](AttentionProblem &p) { p.seqlenK = -5; },
                   "must both be >= 1"},
        BadProblem{"zero_seqlen_q", kPlain,
                   [](AttentionProblem &p) { p.seqlenQ = 0; },
                   "must both be >= 1"},
        // Varlen sequences must not be empty: the kernel's contract is
        // Sq, Sk >= 1 (see the report on zero-length sequences).
        BadProblem{"zero_length_varlen_sequence", kVarlen,
                   [](AttentionProblem &p) {
                     p.seqlensQ = {3, 0};
                     p.seqlensK = {3, 5};
                     p.batch = 2;
                   },
                   "every varlen sequence length must be >= 1"},
        BadProblem{"varlen_lengths_on_dense_spec", kPlain,
                   [](AttentionProblem &p) {
                     p.seqlensQ = {3};
                     p.seqlensK = {3};
                   },
                   "need a spec with varlen=1"},
        BadProblem{"varlen_spec_without_lengths", kVarlen,
                   [](AttentionProblem &) {},
                   "give the query and key length of every sequence"},
        BadProblem{"softcap_without_spec", kPlain,
                   [](AttentionProblem &p) { p.softcap = 30; },
                   "needs a spec with softcap=1"},
        BadProblem{"softcap_spec_without_value",
                   "family=fwd,dtype=bf16,d=64,softcap=1",
                   [](AttentionProblem &p) { p.softcap = 0; },
                   "give a finite softcap value"},
        BadProblem{"slopes_per_head", "family=fwd,dtype=bf16,d=64,bias=alibi",
                   [](AttentionProblem &p) { p.alibiSlopes = {0.5f, 0.25f}; },
                   "give one slope per head"},
        BadProblem{"head_dims_differ", kPlain,
                   [](AttentionProblem &p) { p.d = 128; },
                   "differ from the spec's d=64"}),
    [](const ::testing::TestParamInfo<BadProblem> &info) {
      return info.param.label;
    });

} // namespace
