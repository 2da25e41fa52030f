//===- HostTensor.h - A typed host buffer for kernel inputs and outputs ---===//
//
// Holds elements in their storage dtype (fp32 as float, fp16/bf16 as raw
// 16-bit patterns, fp8 as its byte codes), so a kernel reads exactly these
// bytes, and converts to float for the reference and comparisons. Outputs
// are poisoned with NaN before a run so that an element the kernel never
// wrote fails the check.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/KernelSpec.h"
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fmhajit {

class HostTensor {
public:
  /// \p numElements zeros of \p type.
  HostTensor(DType type, size_t numElements);

  DType getType() const { return type; }
  size_t size() const { return count; }
  size_t sizeInBytes() const { return bytes.size(); }
  void *data() { return bytes.data(); }
  const void *data() const { return bytes.data(); }

  /// Element \p i as a float (exact).
  float get(size_t i) const;
  /// Stores \p value rounded to the dtype (nearest even).
  void set(size_t i, float value);

  /// Fills with normal(0, \p stddev) samples, rounded to the dtype; a sample
  /// that rounds to zero is drawn again, so no element is zero and a kernel
  /// reading the wrong element cannot hide behind zeros. Each run of
  /// kFillChunk elements has its own std::mt19937_64, seeded with \p seed
  /// mixed with the run's index (the first with \p seed itself), and the
  /// runs are drawn in parallel: the same values on any number of threads.
  void fillNormal(uint64_t seed, float stddev = 1.0f);
  static constexpr size_t kFillChunk = size_t(1) << 20;
  /// Fills with quiet NaN, so unwritten outputs are caught.
  void poison();

  /// Every element as a float: the rounded values the kernel saw.
  std::vector<float> toFloat() const;

private:
  DType type;
  size_t count;
  std::vector<uint8_t> bytes;
};

} // namespace fmhajit
