//===- HostTarget.h - x86-64 host: work loops and memory tiles ------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "llvm/ADT/StringMap.h"

namespace fmhajit {

/// The host TargetInfo: a kernel runs a range of work items in a loop, tiles
/// live in 64-byte aligned stack buffers, and tile loops use vectors of
/// \p lanes floats; with \p amx its products run on AMX tiles in bf16
/// (HostAmx.h), and with \p packsAtLoad too K and V tiles load straight
/// into their packed operands (createHostTileOps).
std::unique_ptr<TargetInfo> createHostTargetInfo(unsigned lanes, bool amx,
                                                 bool packsAtLoad);

/// \p x (float scalar or vector) rounded to bf16, nearest even, with integer
/// ops: x86 has no bf16 conversion before AVX512-BF16, and LLVM would call
/// __truncsfbf2 per element.
llvm::Value *roundToBf16(llvm::IRBuilderBase &b, llvm::Value *x);

/// This CPU's features, read once per process: each read executes CPUID,
/// which a VM may trap (~100 us), and kernel loads must stay in microseconds.
/// The AMX features count only where the OS granted this process the tile
/// registers (asked for here, once).
const llvm::StringMap<bool> &hostCpuFeatures();

/// \p arch's CPU multiplies bf16 on AMX tiles (AMX-BF16): this machine's
/// for target=host, else the named CPU's as LLVM knows it.
bool hostHasAmxBf16(const ArchInfo &arch);

/// The vector width (fp32 lanes) fmhajit uses for \p arch on this machine:
/// the table's vector_bits, or the host CPU's widest (16 with AVX-512, 8 with
/// AVX2, else 4).
unsigned hostVectorLanes(const ArchInfo &arch);

} // namespace fmhajit
