//===- GpuDriver.h - The one interface to a GPU driver --------------------===//
//
// Everything above the drivers (GpuResources, GpuKernel, DeviceForwardData,
// DeviceCopies, the API's GPU steps) is written once against this class;
// CudaDriver (libcuda) and HipRuntime (libamdhip64) implement it. A new
// device is a new implementation plus a line in gpuDriverFor().
//
// Handles are opaque pointers (a CUstream or hipStream_t, a CUmodule or
// hipModule_t...): the owners in GpuResources.h and GpuModule.h give them
// back. Every failing call is an ErrorKind::Driver error that names the
// driver call ("cuMemAlloc failed: ...", "hipMalloc failed: ..."), so the
// texts users and tests match do not depend on which layer made the call.
//
// The kernel hooks (checkTarget ... configureKernel) are what differs
// between backends in loading a kernel: GpuKernel::load calls them in
// order and does the rest (cache, module table, function) itself.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/AmdgpuCodeObject.h"
#include "compiler/KernelCompiler.h"
#include "runtime/device/TensorMapBoxes.h"
#include "specs/ArchTable.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace fmhajit {

using GpuStreamHandle =
    void *; ///< CUstream / hipStream_t; null: the default stream
using GpuEventHandle = void *;    ///< CUevent / hipEvent_t
using GpuModuleHandle = void *;   ///< CUmodule / hipModule_t
using GpuFunctionHandle = void *; ///< CUfunction / hipFunction_t

/// What fmhajit needs to know about the GPU it runs on, on every backend.
struct GpuDeviceInfo {
  int ordinal = 0;
  std::string name;       ///< "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
  size_t totalMemory = 0; ///< bytes of device memory
  int computeUnits =
      0; ///< streaming multiprocessors (CUDA), compute units (HIP)
  /// The fmhajit target for this GPU, if fmhajit has one.
  std::optional<std::string> target;
};

/// The resources a loaded kernel reports: the driver's function attributes
/// on CUDA, the code object's metadata on HIP (codeObject).
struct GpuKernelResources {
  int registers = 0;  ///< per thread
  int localBytes = 0; ///< per thread: spills and stack (0 is good)
  int staticSharedBytes = 0;
  int maxThreadsPerBlock = 0;
  std::optional<CodeObjectKernel> codeObject; ///< AMDGPU only
};

/// How a kernel is launched: threads per block and dynamic shared bytes.
struct GpuLaunchShape {
  unsigned blockThreads = 0;
  unsigned sharedBytes = 0;
  /// Launch while the previous kernel on the stream still runs (CUDA's
  /// programmatic stream serialization): the kernel waits for it itself.
  bool overlapsPrevious = false;
};

/// A module the driver loaded, with what the load reported.
struct GpuLoadedImage {
  GpuModuleHandle module = nullptr;
  std::string infoLog; ///< the JIT's info log (registers, spills); may be empty
};

class GpuDriver {
public:
  virtual ~GpuDriver();

  /// The backend whose code this driver runs (Nvptx, Amdgpu).
  virtual Backend backend() const = 0;
  virtual const GpuDeviceInfo &device() const = 0;
  /// One line for `fmhajit run`: the GPU, its target, the driver version.
  virtual std::string describe() const = 0;
  /// Why device().target is empty, saying what to do about it.
  virtual std::string noTargetReason() const = 0;

  /// Device memory. allocate() names its call in the error; the caller
  /// adds what the buffer was for (GpuBuffer).
  virtual llvm::Expected<void *> allocate(size_t bytes) = 0;
  virtual void release(void *ptr) = 0;
  /// " (X MiB of Y MiB free)", or empty when the driver cannot say.
  virtual std::string freeMemoryNote() = 0;
  /// Copies and fills are done when they return. They run on the default
  /// stream, which the non-blocking streams kernels run on do not wait for,
  /// and the driver may return from a copy of pageable memory, or from a
  /// fill, before the device has the bytes: a kernel launched next on its
  /// own stream could read them half-written (seen as poisoned outputs on a
  /// busy GPU), so each waits for the default stream.
  virtual llvm::Error copyToDevice(void *dst, const void *src,
                                   size_t bytes) = 0;
  virtual llvm::Error copyToHost(void *dst, const void *src, size_t bytes) = 0;
  /// Fills \p count 16- or 32-bit words at \p dst with \p value.
  virtual llvm::Error fill16(void *dst, uint16_t value, size_t count) = 0;
  virtual llvm::Error fill32(void *dst, uint32_t value, size_t count) = 0;
  /// Zeroes \p count 32-bit words at \p dst on \p stream, in order with
  /// its launches (a kernel's counters before it runs); returns at once.
  virtual llvm::Error clear32Async(void *dst, size_t count,
                                   GpuStreamHandle stream) = 0;

  /// A stream that does not wait on the default one.
  virtual llvm::Expected<GpuStreamHandle> createStream() = 0;
  virtual void destroyStream(GpuStreamHandle stream) = 0;
  virtual llvm::Error synchronize(GpuStreamHandle stream) = 0;
  /// Timing events.
  virtual llvm::Expected<GpuEventHandle> createEvent() = 0;
  virtual void destroyEvent(GpuEventHandle event) = 0;
  virtual llvm::Error record(GpuEventHandle event, GpuStreamHandle stream) = 0;
  /// Waits for \p end; milliseconds between the two records.
  virtual llvm::Expected<float> elapsedMs(GpuEventHandle begin,
                                          GpuEventHandle end) = 0;

  /// Loads a module image (PTX text, an .hsaco) compiled for \p arch. A
  /// std::string, so that PTX, which the driver reads up to a NUL, needs
  /// no terminated copy.
  virtual llvm::Expected<GpuLoadedImage> loadModule(const std::string &image,
                                                    const ArchInfo &arch) = 0;
  virtual void unloadModule(GpuModuleHandle module) = 0;
  /// The bytes of \p module's global \p name (a profiling aid:
  /// fmhajit_timeline); other backends refuse.
  virtual llvm::Expected<std::string> readGlobal(GpuModuleHandle module,
                                                 llvm::StringRef name);
  /// The kernel named \p name (an ErrorKind::Jit error if it is missing).
  virtual llvm::Expected<GpuFunctionHandle> function(GpuModuleHandle module,
                                                     llvm::StringRef name) = 0;
  /// Launches \p fn, whose first parameter is the \p argBytes bytes at
  /// \p args, on a 1-D grid; asynchronous. \p maps, when given, is the
  /// second parameter (kernels that load by TMA).
  virtual llvm::Error launch(GpuFunctionHandle fn, unsigned gridBlocks,
                             GpuLaunchShape shape, GpuStreamHandle stream,
                             const void *args, size_t argBytes,
                             const TensorMaps *maps = nullptr) = 0;
  /// Encodes \p request into the 128 bytes at \p map (CUDA's
  /// cuTensorMapEncodeTiled); other backends refuse.
  virtual llvm::Error encodeTensorMap(const TensorMapRequest &request,
                                      void *map);
  /// Writes \p base into the encoded map at \p map, as if encoded with it
  /// (CUDA's cuTensorMapReplaceAddress); other backends refuse.
  virtual llvm::Error replaceTensorMapAddress(void *map, const void *base);

  /// Kernel hooks, in the order GpuKernel::load calls them.
  /// Whether code for \p arch runs on this GPU (a Usage or Unsupported
  /// error that says which target to use).
  virtual llvm::Error checkTarget(const ArchInfo &arch) const = 0;
  /// How to compile for this driver (NVPTX: the PTX ISA it accepts).
  virtual CompileOptions compileOptions() const = 0;
  /// Checks the artifact's kernel \p name takes one KernelArgs as this
  /// build lays it out; fills what the artifact says of \p resources.
  virtual llvm::Error checkArtifact(llvm::StringRef bytes, llvm::StringRef name,
                                    GpuKernelResources &resources) const = 0;
  /// Reads the loaded function's resources, checks the block fits and
  /// returns its launch shape (opting in to shared memory where needed).
  virtual llvm::Expected<GpuLaunchShape>
  configureKernel(GpuFunctionHandle fn, const KernelSpec &spec,
                  GpuKernelResources &resources) = 0;
  /// What a block is called in errors: "thread blocks", "workgroups".
  virtual const char *blockNoun() const = 0;
};

/// The process-wide driver for GPU code of \p backend: CudaDriver::get()
/// for Nvptx, HipRuntime::get() for Amdgpu; an error for Host.
llvm::Expected<GpuDriver &> gpuDriverFor(Backend backend);

/// "12.5 MiB".
std::string mebibytes(size_t bytes);

} // namespace fmhajit
