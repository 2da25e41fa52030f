//===- VariantChecks.h - What a variant may and may not do ----------------===//
//
// A variant runs inside every kernel that uses it, so it must not be able to
// crash, hang or write outside it (docs/variants.md). Two checks, each
// refusing with a message that names what the variant did:
//  - on clang's unoptimized IR, the shape of the code as written: the entry
//    points and their signatures, calls only to the variant's own functions,
//    the allowed math or the tensor accessor fmhajit_tensor, no recursion,
//    no global variables;
//  - on the optimized IR, what is left once locals live in registers: no
//    memory access at all (fmhajit_tensor is still a call to a pure
//    function then), no pointer casts, no division by a value that may be
//    0 (or -1, for INT_MIN / -1), which traps on x86; and each
//    fmhajit_tensor call names a constant slot, which says what the variant
//    reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/variants/VariantTensorUse.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

/// The user's functions in a variant's module, under the names clang gave
/// them (null where the variant does not define one).
struct VariantEntries {
  llvm::Function *scoreMod = nullptr, *maskMod = nullptr;
};

/// Finds score_mod and mask_mod in \p m (C++ or extern "C" names) and checks
/// the code as written; \p file names the variant in messages.
llvm::Expected<VariantEntries> checkVariantSource(llvm::Module &m,
                                                  llvm::StringRef file);

/// Checks the optimized code: no memory access, no pointer casts, no
/// division that can trap.
llvm::Error checkVariantCode(const llvm::Module &m, llvm::StringRef file);

/// The slots each entry point of the optimized \p m reads with
/// fmhajit_tensor; refuses a slot that is not a constant from 0 to
/// kMaxVariantTensors - 1.
llvm::Expected<VariantTensorUse> findTensorReads(const llvm::Module &m,
                                                 llvm::StringRef file);

/// Whether \p fn is the prelude's fmhajit_tensor (name and type).
bool isTensorRead(const llvm::Function &fn);

/// What a variant may call, as the user writes it, for messages and docs:
/// "expf, exp2f, ..., fmhajit_tensor".
llvm::StringRef allowedCallNames();

} // namespace fmhajit
