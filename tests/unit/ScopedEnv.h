//===- ScopedEnv.h - Environment variables set for one test ---------------===//
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fmhajit {

/// Sets environment variables for one test and restores them after.
class ScopedEnv {
public:
  /// Sets \p name to \p value, or unsets it when \p value is null.
  void set(const char *name, const char *value) {
    const char *old = getenv(name);
    saved.emplace_back(name,
                       old ? std::optional<std::string>(old) : std::nullopt);
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it)
      it->second ? setenv(it->first, it->second->c_str(), 1)
                 : unsetenv(it->first);
  }

private:
  std::vector<std::pair<const char *, std::optional<std::string>>> saved;
};

} // namespace fmhajit
