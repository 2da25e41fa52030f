//===- Profile.h - Named kernel sets (specs/profiles/*.json) --------------===//
//
// A profile is a list of groups; a group maps spec keys to lists of values
// and stands for the cartesian product of those values over the default
// spec. Expanding a profile for a target keeps the specs that validate, in
// the order written, each name once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct ProfileInfo {
  std::string name;
  std::string description;
};

/// Every embedded profile.
std::vector<ProfileInfo> listProfiles();

/// The resolved specs of profile \p name on \p target (every target when
/// none is given), each once. \p name may list several, "decode,training":
/// their specs in that order.
llvm::Expected<std::vector<KernelSpec>>
expandProfile(llvm::StringRef name, std::optional<llvm::StringRef> target);

} // namespace fmhajit
