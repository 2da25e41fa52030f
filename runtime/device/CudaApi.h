//===- CudaApi.h - The few CUDA driver API declarations fmhajit uses ------===//
//
// fmhajit builds without the CUDA toolkit and loads libcuda.so.1 at run
// time (CudaDriver.h), so it declares here the handful of driver API types,
// enumerators and function signatures it calls. Names and values are those
// of the CUDA driver API (cuda.h): CUresult, CUdevice, CUdeviceptr,
// CUcontext, CUmodule, CUfunction, CUstream, CUevent, CUdevice_attribute,
// CUfunction_attribute and CUjit_option. The values are part of the
// driver's stable ABI; only the enumerators used are listed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace fmhajit::cuda {

/// CUresult: 0 is CUDA_SUCCESS; everything else is named by
/// cuGetErrorName.
using CUresult = int;
inline constexpr CUresult kSuccess = 0; ///< CUDA_SUCCESS

using CUdevice = int;                   ///< CUdevice (an ordinal)
using CUdeviceptr = unsigned long long; ///< CUdeviceptr_v2
using CUcontext = struct CUctx_st *;    ///< CUcontext
using CUmodule = struct CUmod_st *;     ///< CUmodule
using CUfunction = struct CUfunc_st *;  ///< CUfunction
using CUstream = struct CUstream_st *;  ///< CUstream (null: legacy stream)
using CUevent = struct CUevent_st *;    ///< CUevent

/// CUdevice_attribute enumerators.
enum CUdeviceAttribute : int {
  kAttrMaxThreadsPerBlock = 1,      ///< ..._MAX_THREADS_PER_BLOCK
  kAttrMaxSharedMemoryPerBlock = 8, ///< ..._MAX_SHARED_MEMORY_PER_BLOCK
  kAttrMultiprocessorCount = 16,    ///< ..._MULTIPROCESSOR_COUNT
  kAttrComputeCapabilityMajor = 75, ///< ..._COMPUTE_CAPABILITY_MAJOR
  kAttrComputeCapabilityMinor = 76, ///< ..._COMPUTE_CAPABILITY_MINOR
  kAttrMaxSharedMemoryPerBlockOptin =
      97, ///< ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
};

/// CUfunction_attribute enumerators.
enum CUfunctionAttribute : int {
  kFuncMaxThreadsPerBlock = 0, ///< CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  kFuncSharedSizeBytes = 1,    ///< CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  kFuncLocalSizeBytes = 3,     ///< CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
  kFuncNumRegs = 4,            ///< CU_FUNC_ATTRIBUTE_NUM_REGS
  kFuncMaxDynamicSharedSizeBytes = 8, ///< ..._MAX_DYNAMIC_SHARED_SIZE_BYTES
};

/// CUlaunchAttribute: an id, then a 64-byte union of values; fmhajit sets
/// only CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (its value
/// programmaticStreamSerializationAllowed, an int).
struct CUlaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value = {};
};
inline constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;

/// CUlaunchConfig, the first argument of cuLaunchKernelEx.
struct CUlaunchConfig {
  unsigned gridDimX = 1, gridDimY = 1, gridDimZ = 1;
  unsigned blockDimX = 1, blockDimY = 1, blockDimZ = 1;
  unsigned sharedMemBytes = 0;
  CUstream stream = nullptr;
  CUlaunchAttribute *attrs = nullptr;
  unsigned numAttrs = 0;
};

/// CUjit_option enumerators (options of cuModuleLoadDataEx).
enum CUjitOption : int {
  kJitWallTime = 2,                ///< CU_JIT_WALL_TIME (out: float ms)
  kJitInfoLogBuffer = 3,           ///< CU_JIT_INFO_LOG_BUFFER
  kJitInfoLogBufferSizeBytes = 4,  ///< CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
  kJitErrorLogBuffer = 5,          ///< CU_JIT_ERROR_LOG_BUFFER
  kJitErrorLogBufferSizeBytes = 6, ///< CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
  kJitLogVerbose = 12,             ///< CU_JIT_LOG_VERBOSE
};

/// CU_EVENT_DEFAULT: events that record timing.
inline constexpr unsigned kEventDefault = 0;
/// CU_STREAM_NON_BLOCKING: a stream that does not wait on the legacy one.
inline constexpr unsigned kStreamNonBlocking = 1;

/// The driver entry points fmhajit calls, with cuda.h's signatures; each
/// comment names the exported symbol CudaDriver resolves (the versioned
/// one where the driver exports several).
struct DriverApi {
  CUresult (*init)(unsigned flags);           // cuInit
  CUresult (*driverGetVersion)(int *version); // cuDriverGetVersion
  CUresult (*getErrorName)(CUresult error, const char **str); // cuGetErrorName
  CUresult (*getErrorString)(CUresult error,
                             const char **str);         // cuGetErrorString
  CUresult (*deviceGetCount)(int *count);               // cuDeviceGetCount
  CUresult (*deviceGet)(CUdevice *device, int ordinal); // cuDeviceGet
  CUresult (*deviceGetAttribute)(int *value, int attribute,
                                 CUdevice device); // cuDeviceGetAttribute
  CUresult (*deviceGetName)(char *name, int length,
                            CUdevice device); // cuDeviceGetName
  CUresult (*deviceTotalMem)(size_t *bytes,
                             CUdevice device); // cuDeviceTotalMem_v2
  CUresult (*devicePrimaryCtxRetain)(
      CUcontext *context,
      CUdevice device);                         // cuDevicePrimaryCtxRetain
  CUresult (*ctxSetCurrent)(CUcontext context); // cuCtxSetCurrent
  CUresult (*ctxSynchronize)();                 // cuCtxSynchronize
  CUresult (*memGetInfo)(size_t *free, size_t *total);  // cuMemGetInfo_v2
  CUresult (*memAlloc)(CUdeviceptr *ptr, size_t bytes); // cuMemAlloc_v2
  CUresult (*memFree)(CUdeviceptr ptr);                 // cuMemFree_v2
  CUresult (*memcpyHtoD)(CUdeviceptr dst, const void *src,
                         size_t bytes); // cuMemcpyHtoD_v2
  CUresult (*memcpyDtoH)(void *dst, CUdeviceptr src,
                         size_t bytes); // cuMemcpyDtoH_v2
  CUresult (*memsetD16)(CUdeviceptr dst, unsigned short value,
                        size_t count); // cuMemsetD16_v2
  CUresult (*memsetD32)(CUdeviceptr dst, unsigned value,
                        size_t count); // cuMemsetD32_v2
  CUresult (*memsetD32Async)(CUdeviceptr dst, unsigned value, size_t count,
                             CUstream stream); // cuMemsetD32Async
  CUresult (*moduleLoadDataEx)(CUmodule *module, const void *image,
                               unsigned numOptions, int *options,
                               void **optionValues); // cuModuleLoadDataEx
  CUresult (*moduleUnload)(CUmodule module);         // cuModuleUnload
  CUresult (*moduleGetGlobal)(CUdeviceptr *ptr, size_t *bytes, CUmodule module,
                              const char *name); // cuModuleGetGlobal_v2
  CUresult (*moduleGetFunction)(CUfunction *function, CUmodule module,
                                const char *name); // cuModuleGetFunction
  CUresult (*funcGetAttribute)(int *value, int attribute,
                               CUfunction function); // cuFuncGetAttribute
  CUresult (*funcSetAttribute)(CUfunction function, int attribute,
                               int value); // cuFuncSetAttribute
  CUresult (*launchKernel)(CUfunction function, unsigned gridX, unsigned gridY,
                           unsigned gridZ, unsigned blockX, unsigned blockY,
                           unsigned blockZ, unsigned sharedBytes,
                           CUstream stream, void **params,
                           void **extra); // cuLaunchKernel
  CUresult (*launchKernelEx)(const CUlaunchConfig *config, CUfunction function,
                             void **params,
                             void **extra); // cuLaunchKernelEx (CUDA 12)
  CUresult (*streamCreate)(CUstream *stream, unsigned flags); // cuStreamCreate
  CUresult (*streamDestroy)(CUstream stream);     // cuStreamDestroy_v2
  CUresult (*streamSynchronize)(CUstream stream); // cuStreamSynchronize
  CUresult (*eventCreate)(CUevent *event, unsigned flags); // cuEventCreate
  CUresult (*eventDestroy)(CUevent event);                 // cuEventDestroy_v2
  CUresult (*eventRecord)(CUevent event, CUstream stream); // cuEventRecord
  CUresult (*eventSynchronize)(CUevent event);             // cuEventSynchronize
  CUresult (*eventElapsedTime)(float *ms, CUevent start,
                               CUevent end); // cuEventElapsedTime(_v2)
  CUresult (*tensorMapEncodeTiled)(
      void *tensorMap, int dataType, unsigned rank, void *globalAddress,
      const uint64_t *globalDim, const uint64_t *globalStrides,
      const unsigned *boxDim, const unsigned *elementStrides, int interleave,
      int swizzle, int l2Promotion,
      int oobFill); // cuTensorMapEncodeTiled (CUDA 12)
  CUresult (*tensorMapReplaceAddress)(
      void *tensorMap,
      void *globalAddress); // cuTensorMapReplaceAddress (CUDA 12; optional)
};

/// CUtensorMapDataType, CUtensorMapSwizzle and CUtensorMapL2promotion
/// enumerators.
enum CUtensorMapEnums : int {
  kTensorMapUint8 = 0,         ///< CU_TENSOR_MAP_DATA_TYPE_UINT8 (fp8)
  kTensorMapFloat16 = 6,       ///< CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  kTensorMapBfloat16 = 9,      ///< CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  kTensorMapSwizzle32 = 1,     ///< CU_TENSOR_MAP_SWIZZLE_32B
  kTensorMapSwizzle64 = 2,     ///< CU_TENSOR_MAP_SWIZZLE_64B
  kTensorMapSwizzle128 = 3,    ///< CU_TENSOR_MAP_SWIZZLE_128B
  kTensorMapL2PromoteNone = 0, ///< CU_TENSOR_MAP_L2_PROMOTION_NONE
  kTensorMapL2Promote64 = 1,   ///< CU_TENSOR_MAP_L2_PROMOTION_L2_64B
  kTensorMapL2Promote128 = 2,  ///< CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  kTensorMapL2Promote256 = 3,  ///< CU_TENSOR_MAP_L2_PROMOTION_L2_256B
};

} // namespace fmhajit::cuda
