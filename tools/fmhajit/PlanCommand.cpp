//===- PlanCommand.cpp - fmhajit plan: the API's choice for a problem -----===//
#include "fmhajit/Fmhajit.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/PlanOptions.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>

using namespace fmhajit;

// The API's message has one problem per line: one `error:` line each, and
// the CLI's exit codes (2 when the problem is what to change).
static int reportStatus(const api::Status &status) {
  llvm::SmallVector<llvm::StringRef, 8> lines;
  llvm::StringRef(status.message()).split(lines, '\n');
  for (llvm::StringRef line : lines)
    llvm::errs() << "error: " << line << "\n";
  llvm::errs().flush();
  return status.code() == api::StatusCode::InvalidArgument ? 2 : 1;
}

int fmhajit::planCommand(llvm::ArrayRef<const char *> argv) {
  auto request = parsePlanOptions(argv);
  if (!request)
    return reportErrors(request.takeError());
  auto start = std::chrono::steady_clock::now();
  api::Result<api::Plan> plan =
      request->backward ? api::planBackward(request->problem, request->options)
                        : api::plan(request->problem, request->options);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (!plan)
    return reportStatus(plan.status());
  llvm::outs() << plan->describe();
  // The wall clock of the whole plan(): its kernels load side by side.
  if (plan->loaded())
    llvm::outs() << "planned and loaded in " << llvm::format("%.1f", ms)
                 << " ms\n";
  llvm::outs().flush();
  return 0;
}
