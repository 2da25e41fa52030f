//===- SharedLibrary.h - A GPU runtime library, opened at run time --------===//
//
// fmhajit builds without any GPU toolkit: a vendor library (libamdhip64,
// libcuda) is dlopen()ed the first time a kernel runs on its device, and
// its entry points are bound by name. A machine without the library gets
// one ErrorKind::Driver error naming what was tried, never a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/Errors.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include <initializer_list>
#include <string>

namespace fmhajit {

class SharedLibrary {
public:
  /// Opens the first of \p names that loads (RTLD_NOW | RTLD_LOCAL, so its
  /// symbols stay out of the namespace the host JIT searches). Handles are
  /// never closed: a GPU runtime unloaded under live contexts crashes at
  /// exit. The error is "<what>: <names> could not be loaded (<why>);
  /// <advice>".
  static llvm::Expected<SharedLibrary> open(llvm::ArrayRef<const char *> names,
                                            const llvm::Twine &what,
                                            const llvm::Twine &advice);

  /// The name that loaded.
  const std::string &name() const { return loaded; }

  /// The address of the first of \p symbols the library exports, or null.
  void *lookup(std::initializer_list<const char *> symbols) const;

  /// Points \p fn at the first of \p symbols found; otherwise adds "<name>
  /// lacks <first symbol>; <advice>" to \p missing.
  template <typename Fn>
  void bind(Fn *&fn, std::initializer_list<const char *> symbols,
            ErrorList &missing, const llvm::Twine &advice) const {
    if (void *address = lookup(symbols))
      fn = reinterpret_cast<Fn *>(address);
    else
      missing.add(ErrorKind::Driver,
                  loaded + " lacks " + *symbols.begin() + "; " + advice);
  }

private:
  SharedLibrary(void *handle, std::string loaded)
      : handle(handle), loaded(std::move(loaded)) {}
  void *handle;
  std::string loaded;
};

} // namespace fmhajit
