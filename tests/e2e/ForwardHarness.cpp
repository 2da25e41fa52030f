//===- ForwardHarness.cpp - Run one forward case and check it -------------===//
#include "ForwardHarness.h"
#include "runtime/numerics/Reference.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"
#include <cctype>
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

Shape Shape::dense(int64_t batch, int64_t headsQ, int64_t headsKv,
                   int64_t seqlenQ, int64_t seqlenK) {
  Shape s;
  s.batch = batch;
  s.headsQ = headsQ;
  s.headsKv = headsKv;
  s.seqlenQ = seqlenQ;
  s.seqlenK = seqlenK;
  return s;
}

Shape Shape::varlen(std::vector<int64_t> lengthsQ,
                    std::vector<int64_t> lengthsK, int64_t headsQ,
                    int64_t headsKv) {
  Shape s;
  s.batch = static_cast<int64_t>(lengthsQ.size());
  s.headsQ = headsQ;
  s.headsKv = headsKv;
  s.varlenQ = std::move(lengthsQ);
  s.varlenK = std::move(lengthsK);
  return s;
}

Shape &Shape::window(int64_t left, int64_t right) {
  windowLeft = left;
  windowRight = right;
  return *this;
}
Shape &Shape::scale(float s) {
  scaleValue = s;
  return *this;
}
Shape &Shape::softcap(float c) {
  softcapValue = c;
  return *this;
}
Shape &Shape::slopes() {
  customSlopes = true;
  return *this;
}

std::optional<KernelSpec> fmhajit::e2e::resolveSpec(const std::string &text) {
  llvm::Expected<KernelSpec> parsed = parseSpec(text);
  if (!parsed) {
    ADD_FAILURE() << text << ": " << llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  llvm::Expected<KernelSpec> spec = validateSpec(*parsed);
  if (!spec) {
    ADD_FAILURE() << text << ": " << llvm::toString(spec.takeError());
    return std::nullopt;
  }
  return *spec;
}

AttentionProblem fmhajit::e2e::makeProblem(const KernelSpec &spec,
                                           const Shape &shape) {
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.batch = shape.batch;
  p.headsQ = shape.headsQ;
  p.headsKv = shape.headsKv;
  p.seqlenQ = shape.seqlenQ;
  p.seqlenK = shape.seqlenK;
  p.seqlensQ = shape.varlenQ;
  p.seqlensK = shape.varlenK;
  p.scale = shape.scaleValue;
  if (spec.softcap)
    p.softcap = shape.softcapValue ? shape.softcapValue : kDefaultSoftcap;
  if (spec.mask == Mask::Window) {
    p.windowLeft = shape.windowLeft;
    p.windowRight = shape.windowRight;
  }
  // Slopes unlike the default ones (steeper, not decreasing) catch a kernel
  // that ignores the slopes it is given.
  if (spec.bias == Bias::Alibi && shape.customSlopes)
    for (int64_t h = 0; h < shape.headsQ; ++h)
      p.alibiSlopes.push_back(0.05f +
                              0.3f * static_cast<float>((h * 5) % 7) / 7);
  return p;
}

ForwardData::ForwardData(const KernelSpec &spec,
                         const AttentionProblem &problem, uint64_t seed,
                         float stddev)
    : q(spec.dtype, numElements(problem.qShape())),
      k(spec.dtype, numElements(problem.kShape())),
      v(spec.dtype, numElements(problem.vShape())),
      o(spec.outType(), numElements(problem.oShape())) {
  q.fillNormal(seed * 3, stddev);
  k.fillNormal(seed * 3 + 1, stddev);
  v.fillNormal(seed * 3 + 2);
  if (spec.lse)
    lse.resize(numElements(problem.lseShape()));
  if (spec.varlen) {
    cuSeqlensQ = problem.cuSeqlensQ();
    cuSeqlensK = problem.cuSeqlensK();
  }
  if (spec.bias == Bias::Alibi)
    slopes = problem.resolvedAlibiSlopes();
  poison();
}

void ForwardData::poison() {
  o.poison();
  std::fill(lse.begin(), lse.end(), NAN);
}

ForwardBuffers ForwardData::buffers() {
  ForwardBuffers b{q.data(), k.data(), v.data(), o.data()};
  b.lse = lse.empty() ? nullptr : lse.data();
  b.cuSeqlensQ = cuSeqlensQ.empty() ? nullptr : cuSeqlensQ.data();
  b.cuSeqlensK = cuSeqlensK.empty() ? nullptr : cuSeqlensK.data();
  b.alibiSlopes = slopes.empty() ? nullptr : slopes.data();
  return b;
}

llvm::Expected<ForwardCheck>
fmhajit::e2e::checkForward(const KernelSpec &spec,
                           const AttentionProblem &problem, uint64_t seed,
                           ForwardRunner run, float stddev) {
  if (llvm::Error err = problem.validate(spec))
    return std::move(err);
  ForwardData data(spec, problem, seed, stddev);
  if (llvm::Error err = run(spec, problem, data))
    return std::move(err);
  ForwardCheck check;
  check.o = data.o.toFloat();
  check.lse = data.lse;
  ReferenceOutput ref = referenceForward(spec, problem, data.q.toFloat(),
                                         data.k.toFloat(), data.v.toFloat());
  check.refO = std::move(ref.o);
  if (spec.lse)
    check.refLse = std::move(ref.lse);
  check.compare = compareOutputs(check.o, check.refO, check.lse, check.refLse,
                                 toleranceFor(spec.dtype, spec.outType()));
  return check;
}

llvm::Expected<std::unique_ptr<HostForwardRunner>> HostForwardRunner::create() {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("fmhajit-e2e-cache", dir))
    return makeError(ErrorKind::Io,
                     "cannot create a cache directory: " + ec.message());
  CacheConfig config;
  config.dir = std::string(dir);
  auto cache = KernelCache::create(std::move(config));
  if (!cache) {
    llvm::sys::fs::remove_directories(dir);
    return cache.takeError();
  }
  return std::unique_ptr<HostForwardRunner>(
      new HostForwardRunner(std::string(dir), std::move(*cache)));
}

HostForwardRunner::~HostForwardRunner() {
  llvm::sys::fs::remove_directories(dir);
}

HostForwardRunner *HostForwardRunner::shared() {
  static std::string failure;
  static std::unique_ptr<HostForwardRunner> runner = [] {
    auto created = create();
    if (!created) {
      failure = llvm::toString(created.takeError());
      return std::unique_ptr<HostForwardRunner>();
    }
    return std::move(*created);
  }();
  if (!runner)
    ADD_FAILURE() << "no host runner: " << failure;
  return runner.get();
}

llvm::Expected<HostKernel> HostForwardRunner::load(const KernelSpec &spec) {
  llvm::Expected<HostKernel> kernel = HostKernel::load(spec, *kernelCache);
  if (kernel)
    names.insert(encodeName(spec));
  return kernel;
}

llvm::Error HostForwardRunner::operator()(const KernelSpec &spec,
                                          const AttentionProblem &problem,
                                          ForwardData &data) {
  llvm::Expected<HostKernel> kernel = load(spec);
  if (!kernel)
    return kernel.takeError();
  kernel->run(makeKernelArgs(spec, problem, data.buffers()), executor);
  return llvm::Error::success();
}

llvm::Expected<ForwardCheck>
fmhajit::e2e::checkOnHost(const KernelSpec &spec,
                          const AttentionProblem &problem, uint64_t seed,
                          float stddev) {
  HostForwardRunner *runner = HostForwardRunner::shared();
  if (!runner)
    return makeError(ErrorKind::Jit, "no host runner");
  return checkForward(
      spec, problem, seed,
      [&](const KernelSpec &s, const AttentionProblem &p, ForwardData &d) {
        return (*runner)(s, p, d);
      },
      stddev);
}

std::string fmhajit::e2e::testName(const std::string &label) {
  std::string name;
  for (char c : label)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

void fmhajit::e2e::PrintTo(const ForwardCase &c, std::ostream *os) {
  const Shape &s = c.shape;
  *os << c.spec << " B=" << s.batch << " H=" << s.headsQ << "/" << s.headsKv;
  if (s.varlenQ.empty())
    *os << " Sq=" << s.seqlenQ << " Sk=" << s.seqlenK;
  else {
    *os << " varlen q=";
    for (int64_t len : s.varlenQ)
      *os << len << ",";
    *os << " k=";
    for (int64_t len : s.varlenK)
      *os << len << ",";
  }
  // Only what makeProblem passes on to this spec.
  auto has = [&](const char *key) {
    return c.spec.find(key) != std::string::npos;
  };
  if (has("mask=window"))
    *os << " window=(" << s.windowLeft << "," << s.windowRight << ")";
  if (has("softcap=1"))
    *os << " softcap=" << (s.softcapValue ? s.softcapValue : kDefaultSoftcap);
  if (has("bias=alibi"))
    *os << (s.customSlopes ? " custom slopes" : " default slopes");
  if (s.scaleValue)
    *os << " scale=" << s.scaleValue;
  *os << " seed=" << c.seed;
}

/// Rows that see no key must be exactly 0, not merely within tolerance of
/// it: the reference's O is exactly 0 there and nowhere else.
static size_t emptyRowMismatches(const ForwardCheck &check) {
  size_t bad = 0;
  for (size_t i = 0; i < check.o.size(); ++i)
    if (check.refO[i] == 0.0 && check.o[i] != 0.0f)
      ++bad;
  return bad;
}

void fmhajit::e2e::expectCasePasses(const ForwardCase &c, ForwardRunner run) {
  std::optional<KernelSpec> spec = resolveSpec(c.spec);
  if (!spec)
    return;
  AttentionProblem problem = makeProblem(*spec, c.shape);
  llvm::Expected<ForwardCheck> check =
      checkForward(*spec, problem, c.seed, run);
  ASSERT_TRUE(bool(check)) << llvm::toString(check.takeError());
  EXPECT_TRUE(check->compare.pass)
      << encodeName(*spec) << ": " << check->compare.summary();
  EXPECT_EQ(emptyRowMismatches(*check), 0u)
      << encodeName(*spec) << ": rows that see no key must be exactly 0";
}

void fmhajit::e2e::expectCasePasses(const ForwardCase &c) {
  HostForwardRunner *runner = HostForwardRunner::shared();
  ASSERT_TRUE(runner);
  expectCasePasses(c, [&](const KernelSpec &s, const AttentionProblem &p,
                          ForwardData &d) { return (*runner)(s, p, d); });
}

std::vector<ForwardCase>
fmhajit::e2e::dtypeHeadDimGrid(llvm::ArrayRef<const char *> dtypes,
                               llvm::ArrayRef<const char *> dims,
                               int64_t shortLen, int64_t longLen) {
  const char *masks[] = {"none", "causal", "causal_br", "window"};
  const int64_t kvHeads[] = {4, 2, 1}; // of 4 query heads: ratio 1, 2, MQA
  std::vector<ForwardCase> cases;
  unsigned i = 0;
  for (const char *dtype : dtypes)
    for (const char *dim : dims) {
      const char *mask = masks[i % 4];
      bool lse = i % 3 != 1;
      std::string spec = std::string("family=fwd,dtype=") + dtype + "," + dim +
                         ",mask=" + mask + (lse ? ",lse=1" : "");
      Shape shape = i % 2
                        ? Shape::dense(1, 4, kvHeads[i % 3], longLen, shortLen)
                        : Shape::dense(2, 4, kvHeads[i % 3], shortLen, longLen);
      shape.window(i % 8 < 4 ? 16 : 7, i % 8 < 4 ? -1 : 3);
      cases.push_back(
          {std::string(dtype) + "_" + dim + "_" + mask + (lse ? "_lse" : ""),
           spec, shape, i + 1});
      ++i;
    }
  return cases;
}
