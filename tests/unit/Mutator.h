//===- Mutator.h - Deterministic random and mutated inputs ----------------===//
//
// Makes the robustness tests' inputs: valid specs and names mutated by byte
// flips, insertions (of bytes or of spec vocabulary), deletions, duplicated
// ranges and splices of two seeds, plus plain random bytes. It draws from its
// own generator (splitmix64), so a seed gives the same inputs with every
// compiler and standard library, and a failure names a reproducible input.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fmhajit {

class Mutator {
public:
  /// \p seeds are the valid inputs to mutate; \p words are fragments worth
  /// inserting (keys, values, separators).
  Mutator(uint64_t seed, std::vector<std::string> seeds,
          std::vector<std::string> words);

  /// A seed with one to four random mutations.
  std::string mutated();
  /// Up to \p maxLength random bytes, biased to printable ASCII.
  std::string randomBytes(size_t maxLength);

  /// A number below \p n (n > 0).
  uint64_t below(uint64_t n) { return next() % n; }

private:
  uint64_t next();
  void mutateOnce(std::string &s);
  char randomByte();

  uint64_t state;
  std::vector<std::string> seeds, words;
};

} // namespace fmhajit
