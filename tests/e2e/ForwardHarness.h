//===- ForwardHarness.h - Run one forward case and check it ---------------===//
//
// The end-to-end tests' one procedure, shared by every backend: build the
// problem of a case, fill fresh seeded random inputs (never zeros), poison
// the outputs (O with NaN, LSE with NaN), let a backend run the kernel, and
// compare O and LSE with the float64 reference at the output dtype's
// tolerance. A backend is a ForwardRunner callback: the host one below JITs
// and runs on a thread pool; a GPU one would copy ForwardData's buffers to
// the device, launch and copy O and LSE back.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"

#include "compiler/KernelCache.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/AttentionProblem.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace fmhajit::e2e {

/// The run-time side of a case, written fluently in tables:
///   Shape::dense(2, 4, 2, 130, 200).window(16, -1)
///   Shape::varlen({1, 77}, {200, 5}, 4, 1).softcap(1.5f)
struct Shape {
  int64_t batch = 1, headsQ = 1, headsKv = 1, seqlenQ = 1, seqlenK = 1;
  std::vector<int64_t> varlenQ, varlenK;
  int64_t windowLeft = -1, windowRight = -1; ///< sent only to mask=window
  float scaleValue = 0;                      ///< 0: 1/sqrt(d)
  float softcapValue = 0;    ///< 0: kDefaultSoftcap when the spec has softcap
  bool customSlopes = false; ///< alibi: per-head slopes of our own

  static Shape dense(int64_t batch, int64_t headsQ, int64_t headsKv,
                     int64_t seqlenQ, int64_t seqlenK);
  static Shape varlen(std::vector<int64_t> lengthsQ,
                      std::vector<int64_t> lengthsK, int64_t headsQ,
                      int64_t headsKv);
  Shape &window(int64_t left, int64_t right);
  Shape &scale(float s);
  Shape &softcap(float c);
  Shape &slopes();
};

/// Gemma 2's cap: what a softcap spec runs with unless a case says otherwise.
inline constexpr float kDefaultSoftcap = 50.0f;

/// The spec \p text (as on the command line), parsed and resolved; fails the
/// calling test on error.
std::optional<KernelSpec> resolveSpec(const std::string &text);

/// \p shape as an AttentionProblem for \p spec (not yet validated). The
/// window is set only for mask=window, the softcap only for softcap=1.
AttentionProblem makeProblem(const KernelSpec &spec, const Shape &shape);

/// Inputs, poisoned outputs and side arrays of one forward call, in host
/// memory, in the packed layouts of AttentionProblem.
struct ForwardData {
  ForwardData(const KernelSpec &spec, const AttentionProblem &problem,
              uint64_t seed, float stddev = 1.0f);

  HostTensor q, k, v, o;
  std::vector<float> lse; ///< [lseShape()] when spec.lse, else empty
  std::vector<int32_t> cuSeqlensQ, cuSeqlensK; ///< under varlen
  std::vector<float> slopes;                   ///< bias=alibi

  /// O and LSE back to NaN, so that anything a run leaves unwritten fails.
  void poison();
  /// Pointers into this data, for makeKernelArgs.
  ForwardBuffers buffers();
};

/// Runs \p spec's kernel on \p data (inputs in, O and LSE out); a backend.
using ForwardRunner = llvm::function_ref<llvm::Error(
    const KernelSpec &spec, const AttentionProblem &problem,
    ForwardData &data)>;

/// What one checked run found.
struct ForwardCheck {
  CompareResult compare;
  std::vector<float> o, lse; ///< the kernel's outputs, as float
  std::vector<double> refO, refLse;
};

/// Validates \p problem, makes seeded inputs and poisoned outputs, runs
/// \p run and compares with the reference at the tolerance of spec.outType().
llvm::Expected<ForwardCheck> checkForward(const KernelSpec &spec,
                                          const AttentionProblem &problem,
                                          uint64_t seed, ForwardRunner run,
                                          float stddev = 1.0f);

/// The host backend: HostKernel::load through a KernelCache on a fresh
/// temporary directory (removed on destruction), run by HostExecutor(2).
class HostForwardRunner {
public:
  static llvm::Expected<std::unique_ptr<HostForwardRunner>> create();
  ~HostForwardRunner();

  /// The process-wide runner the tests share, so that a kernel is compiled
  /// once per process; fails the calling test when it cannot be created.
  static HostForwardRunner *shared();

  /// Loads \p spec's kernel through this runner's cache.
  llvm::Expected<HostKernel> load(const KernelSpec &spec);

  /// Loads and runs \p spec's kernel on \p data in its packed layouts.
  llvm::Error operator()(const KernelSpec &spec,
                         const AttentionProblem &problem, ForwardData &data);

  KernelCache &cache() { return *kernelCache; }
  /// Distinct kernels this runner has loaded.
  size_t distinctKernels() const { return names.size(); }

private:
  HostForwardRunner(std::string dir, std::unique_ptr<KernelCache> cache)
      : dir(std::move(dir)), kernelCache(std::move(cache)), executor(2) {}

  std::string dir;
  std::unique_ptr<KernelCache> kernelCache;
  HostExecutor executor;
  std::set<std::string> names;
};

/// checkForward on the shared host runner.
llvm::Expected<ForwardCheck> checkOnHost(const KernelSpec &spec,
                                         const AttentionProblem &problem,
                                         uint64_t seed, float stddev = 1.0f);

/// One row of a table: a label (the test's name), a spec and a shape.
struct ForwardCase {
  std::string label;
  std::string spec;
  Shape shape;
  uint64_t seed = 1;
};

/// Every dtype x head dim pair once, each with the next mask (none, causal,
/// causal_br, window), K/V heads 4, 2, 1 of 4 query heads and lse on two
/// of three; sequences of \p shortLen and \p longLen, Sq and Sk swapping.
std::vector<ForwardCase> dtypeHeadDimGrid(llvm::ArrayRef<const char *> dtypes,
                                          llvm::ArrayRef<const char *> dims,
                                          int64_t shortLen, int64_t longLen);

/// "<label>" made a valid test name (letters, digits, '_').
std::string testName(const std::string &label);

void PrintTo(const ForwardCase &c, std::ostream *os);

/// Runs \p c with \p run and expects it to match the reference, and rows
/// that see no key to be exactly 0; the body of the table tests.
void expectCasePasses(const ForwardCase &c, ForwardRunner run);
/// The same on the shared host runner.
void expectCasePasses(const ForwardCase &c);

} // namespace fmhajit::e2e
