//===- SharedLibrary.cpp - A GPU runtime library, opened at run time ------===//
#include "runtime/device/SharedLibrary.h"
#include "llvm/ADT/StringExtras.h"
#include <dlfcn.h>

using namespace fmhajit;

llvm::Expected<SharedLibrary>
SharedLibrary::open(llvm::ArrayRef<const char *> names, const llvm::Twine &what,
                    const llvm::Twine &advice) {
  std::string firstFailure;
  for (const char *name : names) {
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return SharedLibrary(handle, name);
    const char *why = dlerror();
    if (firstFailure.empty())
      firstFailure = why ? why : "unknown reason";
  }
  return makeError(ErrorKind::Driver, what + ": " + llvm::join(names, ", ") +
                                          " could not be loaded (" +
                                          firstFailure + "); " + advice);
}

void *SharedLibrary::lookup(std::initializer_list<const char *> symbols) const {
  for (const char *symbol : symbols)
    if (void *address = dlsym(handle, symbol))
      return address;
  return nullptr;
}
