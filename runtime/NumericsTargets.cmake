# fmhajit_numerics: host-side numerics for checking kernels (problem shapes and
# validation, fp16/bf16 conversions, host tensors, the float64 reference,
# tolerances and comparison, .npy run bundles). LLVM Support only, no IR.
add_library(fmhajit_numerics STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/AppendKvCompare.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/AttentionProblem.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/Compare.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/FamilyReference.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/HalfPrecision.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/HostTensor.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/KvCache.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/KvCacheData.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/Npy.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/Reference.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/Rotary.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/RunBundle.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/Tolerance.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/ValidateProblem.cpp)
target_link_libraries(fmhajit_numerics PUBLIC fmhajit_specs)
fmhajit_llvm(fmhajit_numerics support)
