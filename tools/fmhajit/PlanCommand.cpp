//===- PlanCommand.cpp - fmhajit plan: the API's choice for a problem -----===//
#include "fmhajit/Fmhajit.h"
#include "tools/fmhajit/Commands.h"
#include "tools/fmhajit/PlanOptions.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

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
  api::Result<api::Plan> plan =
      request->backward ? api::planBackward(request->problem, request->options)
                        : api::plan(request->problem, request->options);
  if (!plan)
    return reportStatus(plan.status());
  llvm::outs() << plan->describe();
  llvm::outs().flush();
  return 0;
}
