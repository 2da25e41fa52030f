//===- AppendKvCompare.cpp - Checking what append_kv left behind ----------===//
#include "runtime/numerics/AppendKvCompare.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>
#include <vector>

using namespace fmhajit;

namespace {
/// The cache rows an append writes, in (b, token) order.
std::vector<int64_t> appendedRows(const AppendKvProblem &p,
                                  llvm::ArrayRef<int32_t> table) {
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.newTokens; ++i)
      rows.push_back(p.cache.cacheRow(table, b, p.cacheLens[b] + i));
  return rows;
}

bool sameBits(float x, float y) {
  return std::memcmp(&x, &y, sizeof(float)) == 0;
}

/// Compares the appended rows of one cache and counts changed elements
/// elsewhere.
CompareResult compareCache(llvm::ArrayRef<int64_t> rows, int64_t rowElements,
                           llvm::ArrayRef<float> after,
                           llvm::ArrayRef<float> before,
                           llvm::ArrayRef<double> ref, DType dtype,
                           size_t &clobbered) {
  std::vector<bool> appended(after.size() / rowElements, false);
  std::vector<float> got;
  std::vector<double> want;
  for (int64_t row : rows) {
    appended[row] = true;
    for (int64_t e = row * rowElements; e < (row + 1) * rowElements; ++e) {
      got.push_back(after[e]);
      want.push_back(ref[e]);
    }
  }
  for (size_t row = 0; row < appended.size(); ++row)
    for (int64_t e = row * rowElements;
         !appended[row] && e < int64_t(row + 1) * rowElements; ++e)
      clobbered += !sameBits(after[e], before[e]);
  return compareOutputs(got, want, {}, {}, dtype);
}
} // namespace

AppendKvCheck fmhajit::compareAppendKv(
    const AppendKvProblem &p, llvm::ArrayRef<int32_t> table,
    const AppendKvReference &ref, llvm::ArrayRef<float> kAfter,
    llvm::ArrayRef<float> vAfter, llvm::ArrayRef<float> kBefore,
    llvm::ArrayRef<float> vBefore, llvm::ArrayRef<float> qOut, DType dtype,
    DType outType) {
  AppendKvCheck check;
  std::vector<int64_t> rows = appendedRows(p, table);
  check.k = compareCache(rows, p.headsKv * p.d, kAfter, kBefore, ref.kCache,
                         dtype, check.clobbered);
  check.v = compareCache(rows, p.headsKv * p.dv, vAfter, vBefore, ref.vCache,
                         dtype, check.clobbered);
  check.pass = check.k.pass && check.v.pass && check.clobbered == 0;
  if (p.rotateQ) {
    check.hasQ = true;
    check.q = compareOutputs(qOut, ref.q, {}, {}, outType);
    check.pass = check.pass && check.q.pass;
  }
  return check;
}

std::string AppendKvCheck::summary() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << (pass ? "PASS" : "FAIL") << ": k " << k.summary() << "; v "
     << v.summary();
  if (hasQ)
    os << "; q " << q.summary();
  os << "; " << clobbered << " other cache elements changed";
  return text;
}
