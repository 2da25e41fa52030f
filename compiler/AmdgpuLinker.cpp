//===- AmdgpuLinker.cpp - ELF object to HSA code object, with lld ---------===//
#include "compiler/AmdgpuLinker.h"
#include "specs/Errors.h"
#if FMHAJIT_HAVE_LLD
#include "lld/Common/Driver.h"
#endif
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <mutex>

#if FMHAJIT_HAVE_LLD
LLD_HAS_DRIVER(elf)
#endif

using namespace fmhajit;
using namespace llvm;

// A fresh directory only this user can enter: the object and the code
// object never sit where another user could swap them.
static Expected<std::string> createPrivateDirectory() {
  for (int attempt = 0; attempt < 16; ++attempt) {
    SmallString<128> dir;
    sys::fs::createUniquePath("fmhajit-lld-%%%%%%%%%%%%", dir,
                              /*MakeAbsolute=*/true);
    std::error_code ec = sys::fs::create_directory(
        dir, /*IgnoreExisting=*/false, sys::fs::perms::owner_all);
    if (!ec)
      return std::string(dir);
    if (ec != std::errc::file_exists)
      return makeError(ErrorKind::Io,
                       "cannot create a temporary directory for lld (" + dir +
                           "): " + ec.message() +
                           "; set TMPDIR to a writable directory");
  }
  return makeError(ErrorKind::Io,
                   "cannot create a unique temporary directory for lld");
}

static Error writeFile(StringRef path, StringRef bytes) {
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (!ec) {
    os << bytes;
    os.close();
    ec = os.error();
  }
  if (ec)
    return makeError(ErrorKind::Io,
                     "cannot write " + path + ": " + ec.message());
  return Error::success();
}

// lld keeps per-link global state: one link at a time, and none after a
// link that says the process cannot run another.
static Error runLld(ArrayRef<const char *> args) {
#if !FMHAJIT_HAVE_LLD
  // lld's static archives pull in LTO and with it every LLVM target: the
  // static build (made to travel to NVIDIA machines) leaves lld out.
  return makeError(
      ErrorKind::Unsupported,
      "this fmhajit was built with FMHAJIT_STATIC, which leaves out lld: "
      "link AMDGPU code objects with the default build");
#else
  static std::mutex mutex;
  static bool broken = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (broken)
    return makeError(ErrorKind::Jit,
                     "lld failed earlier in this process and cannot run again; "
                     "restart the process");
  std::string messages;
  raw_string_ostream out(messages), err(messages);
  lld::Result result =
      lld::lldMain(args, out, err, {{lld::Gnu, &lld::elf::link}});
  broken = !result.canRunAgain;
  if (result.retCode != 0)
    return makeError(ErrorKind::Jit,
                     "lld could not link the AMDGPU code object: " +
                         StringRef(messages).trim());
  return Error::success();
#endif
}

Expected<std::string> fmhajit::linkCodeObject(StringRef object) {
  Expected<std::string> dir = createPrivateDirectory();
  if (!dir)
    return dir.takeError();
  scope_exit removeDir([&] { (void)sys::fs::remove_directories(*dir); });
  SmallString<128> input(*dir), output(*dir);
  sys::path::append(input, "kernel.o");
  sys::path::append(output, "kernel.hsaco");
  if (Error err = writeFile(input, object))
    return std::move(err);
  const char *args[] = {"ld.lld",      "-shared", "--no-undefined",
                        input.c_str(), "-o",      output.c_str()};
  if (Error err = runLld(args))
    return std::move(err);
  ErrorOr<std::unique_ptr<MemoryBuffer>> linked = MemoryBuffer::getFile(
      output, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!linked)
    return makeError(ErrorKind::Io,
                     "cannot read the code object lld wrote to " + output +
                         ": " + linked.getError().message());
  return (*linked)->getBuffer().str();
}
