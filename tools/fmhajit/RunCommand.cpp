//===- RunCommand.cpp - fmhajit run: plan, run, check, save, time ---------===//
//
// A client of the public API: api::plan with the spec pinned
// (Options::kernel), one checked run of runtime/harness on poisoned
// outputs, then the timed runs. Prints the lines of docs/run.md.
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "ir/targets/NvptxTimeline.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/device/GpuModule.h"
#include "runtime/harness/AppendCase.h"
#include "runtime/harness/DeviceReport.h"
#include "runtime/harness/ForwardCase.h"
#include "runtime/harness/RunTimer.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/RunOptions.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>

using namespace fmhajit;

/// \p value printed with \p spec ("%.2f ms").
static std::string fmt(const char *spec, double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format(spec, value);
  return text;
}

namespace {
/// What a run prints, line by line: every line starts with a word padded
/// to 9 columns (docs/run.md).
struct Report {
  llvm::raw_ostream &os = llvm::outs();

  void line(llvm::StringRef word, const llvm::Twine &text) {
    os << llvm::left_justify(word, 8) << " " << text << "\n";
  }
};
} // namespace

// The flags the spec rules out, then the API's refusal (one problem a
// line): an invalid input, exit 1, like an invalid spec.
static int reportRefusal(const RunRequest &req, const api::Status &status) {
  ErrorList errors;
  for (const std::string &mismatch : req.specMismatches)
    errors.add(ErrorKind::Spec, mismatch);
  errors.add(toError(status));
  return reportErrors(errors.take());
}

static void printLoad(Report &r, const api::PlanStep &step, bool gpu) {
  const api::StepLoad &l = step.load;
  if (!gpu) {
    r.line("load", fmt("%.2f ms", l.codegenMs) + " (" + l.origin + ")");
    return;
  }
  r.line("load", fmt("%.2f ms", l.codegenMs + l.driverMs) + " (" + l.origin +
                     ") = codegen " + fmt("%.2f ms", l.codegenMs) +
                     " + driver " + fmt("%.2f ms", l.driverMs));
  r.line("launch", llvm::Twine(step.workItems) + " blocks x " +
                       llvm::Twine(l.blockThreads) + " threads, " +
                       llvm::Twine(l.sharedBytes) + " B shared, " +
                       llvm::Twine(l.registers) + " registers, " +
                       llvm::Twine(l.localBytes) + " B local");
}

// The `splits` line: where the part count came from. Under a split
// schedule (sequences of mixed lengths) the count is the most parts of one
// sequence, and the schedule's line says the rest.
static void printSplits(Report &r, const RunRequest &req,
                        const api::Plan &plan) {
  for (const std::string &d : plan.decisions()) {
    size_t at = d.find("a split schedule");
    if (!llvm::StringRef(d).starts_with("plan: ") || at == std::string::npos)
      continue;
    std::string what = d.substr(at, d.find(", combined by") - at);
    r.line("splits", llvm::Twine(plan.steps().front().keySplits) +
                         " at most per sequence (" + what + ")");
    return;
  }
  std::string why = "--num-splits";
  if (!req.numSplitsGiven)
    for (const std::string &d : plan.decisions())
      if (llvm::StringRef(d).starts_with("plan: ") &&
          d.find(" key splits (") != std::string::npos)
        why = llvm::StringRef(d).split(" (").second.drop_back().str();
  r.line("splits",
         llvm::Twine(plan.steps().front().keySplits) + " (" + why + ")");
}

static void printKernels(Report &r, const RunRequest &req,
                         const api::Plan &plan) {
  const std::vector<api::PlanStep> &steps = plan.steps();
  bool gpu = plan.device() != api::Device::Host;
  r.line("kernel", steps.front().kernel);
  if (gpu) {
    auto device = harness::describeDevice(plan.device());
    if (!device)
      llvm::consumeError(device.takeError());
    else
      r.line("device", *device);
  }
  if (steps.size() > 1)
    r.line("combine", steps[1].kernel);
  printLoad(r, steps.front(), gpu);
}

static void printTiming(Report &r, const harness::Timing &t, double flops,
                        double bytes, const api::Plan &plan,
                        const RunRequest &req) {
  bool gpu = plan.device() != api::Device::Host;
  std::string of = "(median of " + std::to_string(t.runs) + ", ";
  unsigned threads = req.options.threads
                         ? req.options.threads
                         : llvm::hardware_concurrency().compute_thread_count();
  if (gpu)
    of += std::string(t.clock) + ")";
  else
    of += std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  r.line("time", fmt(gpu ? "%.4f ms" : "%.3f ms", t.ms) + " " + of);
  if (bytes > 0) {
    r.line("GB/s", fmt("%.2f", bytes / (t.ms * 1e6)));
    return;
  }
  r.line("GFLOPS", fmt("%.1f", flops / (t.ms * 1e6)));
  if (gpu)
    r.line("TFLOPS", fmt("%.2f", flops / (t.ms * 1e9)));
}

// Split-KV's kernels stamp each block's start and end (NvptxTimeline.h):
// every step's go to PATH as CSV, one line per block, in ns of the GPU's
// global timer.
static void writeBlockTimes(Report &r, const api::Plan &plan,
                            const std::string &path) {
  std::string csv = "step,kernel,block,start_ns,end_ns\n";
  size_t blocks = 0;
  for (size_t step = 0; step < plan.steps().size(); ++step) {
    const std::string &kernel = plan.steps()[step].kernel;
    auto words = readLoadedGlobal(kernel, kBlockTimesGlobal);
    if (!words) {
      llvm::consumeError(words.takeError()); // a kernel without block stamps
      continue;
    }
    for (size_t at = 0; at + 16 <= words->size(); at += 16) {
      uint64_t start, end;
      std::memcpy(&start, words->data() + at, 8);
      std::memcpy(&end, words->data() + at + 8, 8);
      if (!start)
        continue;
      csv += std::to_string(step) + ',' + kernel + ',' +
             std::to_string(at / 16) + ',' + std::to_string(start) + ',' +
             std::to_string(end) + '\n';
      ++blocks;
    }
  }
  if (!blocks)
    return;
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    r.line("blocks", "not written: " + path + ": " + ec.message());
    return;
  }
  os << csv;
  r.line("blocks",
         path + " (" + std::to_string(blocks) + " blocks' start and end)");
}

// FMHAJIT_TIMELINE=FILE (docs/bench.md): the kernel was compiled with
// clock stamps (ir/targets/NvptxTimeline.h), and the last launch's go to
// FILE as CSV. A profiling aid: a failure is reported, never fatal.
static void writeTimeline(Report &r, const api::Plan &plan) {
  const char *path = std::getenv("FMHAJIT_TIMELINE");
  if (!path || !*path || plan.device() == api::Device::Host)
    return;
  auto words = readLoadedGlobal(plan.steps().front().kernel, kTimelineGlobal);
  if (!words) {
    r.line("timeline", "not read: " + llvm::toString(words.takeError()));
    return;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    r.line("timeline",
           std::string("not written: ") + path + ": " + ec.message());
    return;
  }
  os << "warpgroup,event,clock\n";
  size_t stamps = 0;
  for (size_t at = 0; at + 8 <= words->size(); at += 8) {
    uint64_t word;
    std::memcpy(&word, words->data() + at, 8);
    if (!word)
      continue;
    os << (word >> 56) << ',' << ((word >> 48) & 0xff) << ','
       << (word & ((uint64_t(1) << 48) - 1)) << '\n';
    ++stamps;
  }
  r.line("timeline", std::string(path) + " (" + std::to_string(stamps) +
                         " stamps of block 0)");
  writeBlockTimes(r, plan, std::string(path) + ".blocks.csv");
}

// The checked run's verdict and bundle, then the timed runs; the exit code.
template <typename Case, typename Verdict>
static int finishRun(Report &r, const RunRequest &req, const api::Plan &plan,
                     Case &c, Verdict check,
                     llvm::function_ref<llvm::Error(const KernelSpec &)> save,
                     double flops, double bytes) {
  bool pass = true;
  if (req.check) {
    auto verdict = check();
    r.line("check", verdict.summary());
    pass = verdict.pass;
  }
  if (req.saveDir) {
    auto kernel = decodeName(plan.steps().front().kernel);
    if (!kernel)
      return reportErrors(kernel.takeError());
    if (llvm::Error err = save(*kernel))
      return reportErrors(std::move(err));
    r.line("saved", *req.saveDir);
  }
  auto timing = harness::timeRuns(plan.device(), req.iterations,
                                  [&] { return c.launch(plan); });
  if (!timing)
    return reportErrors(timing.takeError());
  printTiming(r, *timing, flops, bytes, plan, req);
  writeTimeline(r, plan);
  r.os.flush();
  return pass ? 0 : 1;
}

// The variant's tensors: as many --variant-tensor as it reads slots (the
// API would refuse other counts too, in its own words), one line each.
static llvm::Error giveVariantTensors(Report &r, const RunRequest &req,
                                      const api::Plan &plan,
                                      harness::ForwardCase &c) {
  size_t wanted = size_t(plan.variantTensorCount());
  if (req.variantTensors.size() != wanted)
    return makeError(ErrorKind::Usage,
                     "--variant " + req.problem.variantName + " reads " +
                         llvm::Twine(wanted) +
                         " run-time tensors (fmhajit_tensor's slots; `fmhajit "
                         "plan` says which): give " +
                         llvm::Twine(wanted) +
                         " --variant-tensor FILE.npy, in slot order, not " +
                         llvm::Twine(req.variantTensors.size()));
  std::vector<std::vector<float>> values;
  for (size_t slot = 0; slot < wanted; ++slot) {
    const VariantTensorFlag &t = req.variantTensors[slot];
    r.line("tensor", llvm::Twine(slot) + ": " + t.file + " (" +
                         llvm::Twine(t.values.size()) + " floats)");
    values.push_back(t.values);
  }
  c.setVariantTensors(std::move(values));
  return llvm::Error::success();
}

static int runForward(const RunRequest &req) {
  Report r;
  api::Result<api::Plan> plan = api::plan(req.problem, req.options);
  if (!plan || !req.specMismatches.empty())
    return reportRefusal(req, plan.status());
  auto c = harness::ForwardCase::make(req.problem, plan->target(), req.seed);
  if (!c)
    return reportErrors(c.takeError());
  if (llvm::Error err = giveVariantTensors(r, req, *plan, *c))
    return reportErrors(std::move(err));
  if (req.descales)
    c->setDescales((*req.descales)[0], (*req.descales)[1], (*req.descales)[2]);
  if (req.dropout) {
    c->setDropout(*req.dropout);
    r.line("dropout", fmt("p %g", req.dropout->p) + ", seed " +
                          std::to_string(req.dropout->seed) + ", offset " +
                          std::to_string(req.dropout->offset));
  }
  printKernels(r, req, *plan);
  if (req.problem.pagesKv.enabled())
    r.line("cache", llvm::Twine(req.problem.pagesKv.numPages) + " pages of " +
                        llvm::Twine(req.problem.pagesKv.pageSize) +
                        " rows, shuffled");
  if (hasSplitWorkItems(req.spec.family))
    printSplits(r, req, *plan);
  if (llvm::Error err = c->run(*plan))
    return reportErrors(std::move(err));
  unsigned splits = unsigned(plan->steps().front().keySplits);
  return finishRun(
      r, req, *plan, *c, [&] { return c->check(); },
      [&](const KernelSpec &kernel) {
        return c->save(*req.saveDir, kernel, splits);
      },
      c->flops(), 0);
}

static std::string appendCacheText(const api::AppendProblem &a) {
  std::string text =
      a.pagesKv.enabled()
          ? std::to_string(a.pagesKv.numPages) + " pages of " +
                std::to_string(a.pagesKv.pageSize) + " rows, shuffled"
          : "contiguous, " + std::to_string(a.capacity) + " rows";
  const char *form = a.rotary == api::Rotary::Interleaved ? "interleaved"
                     : a.rotary == api::Rotary::Half      ? "half"
                                                          : "none";
  return text + "; rotary " + form + (a.rotateQ ? " (K and Q)" : "");
}

static int runAppend(const RunRequest &req) {
  Report r;
  api::Result<api::Plan> plan = api::plan(req.append, req.options);
  if (!plan || !req.specMismatches.empty())
    return reportRefusal(req, plan.status());
  auto c = harness::AppendCase::make(req.append, plan->target(), req.seed);
  if (!c)
    return reportErrors(c.takeError());
  const api::PlanStep &step = plan->steps().front();
  r.line("kernel",
         step.kernel +
             (step.load.origin.empty() ? "" : " (" + step.load.origin + ")"));
  r.line("cache", appendCacheText(req.append));
  if (llvm::Error err = c->run(*plan))
    return reportErrors(std::move(err));
  return finishRun(
      r, req, *plan, *c, [&] { return c->check(); },
      [&](const KernelSpec &kernel) { return c->save(*req.saveDir, kernel); },
      0, c->bytes());
}

int fmhajit::runCommand(llvm::ArrayRef<const char *> argv) {
  auto request = parseRunOptions(argv);
  if (!request)
    return reportErrors(request.takeError());
  if (request->spec.family == Family::BwdDqDkDv)
    return runBackward(*request);
  return request->isAppend() ? runAppend(*request) : runForward(*request);
}
