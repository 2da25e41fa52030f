//===- HipApi.h - The few HIP runtime declarations fmhajit uses -----------===//
//
// fmhajit builds without ROCm and loads libamdhip64 at run time
// (HipRuntime.h), so it declares here the handful of HIP types, enumerators
// and function signatures it calls, with hip_runtime_api.h's names and
// values (ROCm 5, 6 and 7 agree on every one listed). Only what is used is
// listed; the device is addressed by ordinal. hipDeviceProp_t, whose layout
// changed in ROCm 6, is read only for the GPU's gfx name, through the
// versioned hipGetDevicePropertiesR0600 (ROCm 6 and newer) at that
// layout's offset.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>

namespace fmhajit::hip {

/// hipError_t: 0 is hipSuccess; everything else is named by hipGetErrorName.
using hipError_t = int;
inline constexpr hipError_t kSuccess = 0; ///< hipSuccess

using hipDevice_t = int;                           ///< hipDevice_t (an ordinal)
using hipModule_t = struct ihipModule_t *;         ///< hipModule_t
using hipFunction_t = struct ihipModuleSymbol_t *; ///< hipFunction_t
using hipStream_t =
    struct ihipStream_t *; ///< hipStream_t (null: the null stream)
using hipEvent_t = struct ihipEvent_t *; ///< hipEvent_t

/// hipMemcpyKind enumerators.
enum hipMemcpyKind : int {
  kMemcpyHostToDevice = 1, ///< hipMemcpyHostToDevice
  kMemcpyDeviceToHost = 2, ///< hipMemcpyDeviceToHost
};

/// hipDeviceAttribute_t enumerators.
enum hipDeviceAttribute : int {
  kAttrMultiprocessorCount = 63, ///< hipDeviceAttributeMultiprocessorCount
};

/// hipDeviceProp_tR0600: its size, and the offset of gcnArchName
/// (char[256], "gfx942:sramecc+:xnack-"), after 1160 bytes of fields
/// fmhajit does not read. The buffer fmhajit passes is larger than the
/// struct, so a runtime that writes a few more bytes does no harm.
inline constexpr size_t kDevicePropBytes = 1472;
inline constexpr size_t kDevicePropGcnArchNameOffset = 1160;
inline constexpr size_t kDevicePropGcnArchNameBytes = 256;

/// hipStreamNonBlocking: a stream that does not wait on the null stream.
inline constexpr unsigned kStreamNonBlocking = 1;

/// The `extra` array of hipModuleLaunchKernel: the kernarg segment as one
/// buffer (HIP_LAUNCH_PARAM_BUFFER_POINTER, _SIZE, _END).
inline void *const kLaunchParamBufferPointer = reinterpret_cast<void *>(1);
inline void *const kLaunchParamBufferSize = reinterpret_cast<void *>(2);
inline void *const kLaunchParamEnd = reinterpret_cast<void *>(3);

/// The runtime entry points fmhajit calls, with hip_runtime_api.h's
/// signatures; each comment names the exported symbol HipRuntime binds.
struct RuntimeApi {
  hipError_t (*init)(unsigned flags);              // hipInit
  hipError_t (*runtimeGetVersion)(int *version);   // hipRuntimeGetVersion
  const char *(*getErrorName)(hipError_t error);   // hipGetErrorName
  const char *(*getErrorString)(hipError_t error); // hipGetErrorString
  hipError_t (*getDeviceCount)(int *count);        // hipGetDeviceCount
  hipError_t (*deviceGetName)(char *name, int length,
                              hipDevice_t device); // hipDeviceGetName
  hipError_t (*deviceTotalMem)(size_t *bytes,
                               hipDevice_t device); // hipDeviceTotalMem
  hipError_t (*deviceGetAttribute)(int *value, int attribute,
                                   hipDevice_t device); // hipDeviceGetAttribute
  /// Null before ROCm 6 (the symbol is optional).
  hipError_t (*getDeviceProperties)(
      void *props, hipDevice_t device); // hipGetDevicePropertiesR0600
  hipError_t (*memGetInfo)(size_t *free, size_t *total); // hipMemGetInfo
  hipError_t (*malloc)(void **ptr, size_t bytes);        // hipMalloc
  hipError_t (*free)(void *ptr);                         // hipFree
  hipError_t (*memcpy)(void *dst, const void *src, size_t bytes,
                       int kind); // hipMemcpy
  hipError_t (*memsetD16)(void *dst, unsigned short value,
                          size_t count);                       // hipMemsetD16
  hipError_t (*memsetD32)(void *dst, int value, size_t count); // hipMemsetD32
  hipError_t (*memsetD32Async)(void *dst, int value, size_t count,
                               hipStream_t stream); // hipMemsetD32Async
  hipError_t (*moduleLoadData)(hipModule_t *module,
                               const void *image); // hipModuleLoadData
  hipError_t (*moduleUnload)(hipModule_t module);  // hipModuleUnload
  hipError_t (*moduleGetFunction)(hipFunction_t *function, hipModule_t module,
                                  const char *name); // hipModuleGetFunction
  hipError_t (*moduleLaunchKernel)(hipFunction_t function, unsigned gridX,
                                   unsigned gridY, unsigned gridZ,
                                   unsigned blockX, unsigned blockY,
                                   unsigned blockZ, unsigned sharedBytes,
                                   hipStream_t stream, void **params,
                                   void **extra); // hipModuleLaunchKernel
  hipError_t (*streamCreateWithFlags)(
      hipStream_t *stream,
      unsigned flags);                             // hipStreamCreateWithFlags
  hipError_t (*streamDestroy)(hipStream_t stream); // hipStreamDestroy
  hipError_t (*streamSynchronize)(hipStream_t stream); // hipStreamSynchronize
  hipError_t (*eventCreate)(hipEvent_t *event);        // hipEventCreate
  hipError_t (*eventDestroy)(hipEvent_t event);        // hipEventDestroy
  hipError_t (*eventRecord)(hipEvent_t event,
                            hipStream_t stream);    // hipEventRecord
  hipError_t (*eventSynchronize)(hipEvent_t event); // hipEventSynchronize
  hipError_t (*eventElapsedTime)(float *ms, hipEvent_t start,
                                 hipEvent_t stop); // hipEventElapsedTime
};

} // namespace fmhajit::hip
