//===- Mutator.cpp - Deterministic random and mutated inputs --------------===//
#include "tests/unit/Mutator.h"
#include <algorithm>
#include <cassert>

using namespace fmhajit;

Mutator::Mutator(uint64_t seed, std::vector<std::string> seeds,
                 std::vector<std::string> words)
    : state(seed), seeds(std::move(seeds)), words(std::move(words)) {
  assert(!this->seeds.empty() && !this->words.empty());
}

// splitmix64: tiny, fast, and the same everywhere.
uint64_t Mutator::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Mostly printable, so mutations look like typos; sometimes anything at all.
char Mutator::randomByte() {
  if (below(4) == 0)
    return static_cast<char>(below(256));
  return static_cast<char>(0x20 + below(0x5f));
}

void Mutator::mutateOnce(std::string &s) {
  size_t pos = below(s.size() + 1);
  size_t len = below(std::min<size_t>(s.size() - pos, 8) + 1);
  switch (below(8)) {
  case 0: // flip one bit
    if (pos < s.size())
      s[pos] = static_cast<char>(s[pos] ^ (1u << below(8)));
    return;
  case 1: // replace a byte
    if (pos < s.size())
      s[pos] = randomByte();
    return;
  case 2: // insert a byte
    s.insert(s.begin() + pos, randomByte());
    return;
  case 3: // insert a word of the vocabulary
    s.insert(pos, words[below(words.size())]);
    return;
  case 4: // delete a range
    s.erase(pos, len);
    return;
  case 5: // duplicate a range
    s.insert(pos, s.substr(pos, len));
    return;
  case 6: { // splice: this seed's head, another's tail
    const std::string &other = seeds[below(seeds.size())];
    s = s.substr(0, pos) + other.substr(below(other.size() + 1));
    return;
  }
  default: // truncate
    s.resize(pos);
    return;
  }
}

std::string Mutator::mutated() {
  std::string s = seeds[below(seeds.size())];
  for (uint64_t n = 1 + below(4); n > 0; --n)
    mutateOnce(s);
  return s;
}

std::string Mutator::randomBytes(size_t maxLength) {
  std::string s(below(maxLength + 1), '\0');
  for (char &c : s)
    c = randomByte();
  return s;
}
