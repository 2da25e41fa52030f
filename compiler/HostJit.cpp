//===- HostJit.cpp - Loading host kernel objects into this process --------===//
#include "compiler/HostJit.h"
#include "compiler/TargetMachines.h"
#include "specs/Errors.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace fmhajit;
using namespace llvm;

Expected<HostJit &> HostJit::global() {
  static std::mutex mutex;
  static std::unique_ptr<HostJit> instance;
  std::lock_guard<std::mutex> lock(mutex);
  if (instance)
    return *instance;
  initializeTargets();
  auto jit = orc::LLJITBuilder().create();
  if (!jit)
    return makeError(ErrorKind::Jit,
                     "cannot start the host JIT: " + toString(jit.takeError()));
  // Kernels call libm (log2f in epilogues): resolve them from this process.
  auto process = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return makeError(ErrorKind::Jit,
                     "cannot expose process symbols to the JIT: " +
                         toString(process.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  instance.reset(new HostJit(std::move(*jit)));
  return *instance;
}

Expected<void *> HostJit::load(StringRef name, StringRef object) {
  std::lock_guard<std::mutex> lock(mutex);
  if (void *fn = loaded.lookup(name))
    return fn;
  auto buffer = MemoryBuffer::getMemBufferCopy(object, name);
  if (Error err = jit->addObjectFile(std::move(buffer)))
    return makeError(ErrorKind::Jit, "cannot link kernel " + name + ": " +
                                         toString(std::move(err)));
  auto address = jit->lookup(name);
  if (!address)
    return makeError(ErrorKind::Jit, "kernel " + name +
                                         " is missing from its object: " +
                                         toString(address.takeError()));
  void *fn = address->toPtr<void *>();
  loaded[name] = fn;
  return fn;
}
