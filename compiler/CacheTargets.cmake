# The compiled-artifact cache: memory + disk, keyed by encoded name and
# fingerprint (docs/cache.md). Included from compiler/CMakeLists.txt.
add_library(fmhajit_compiler_cache STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/CacheFile.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/CachePruner.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/KernelCache.cpp)
target_link_libraries(fmhajit_compiler_cache PUBLIC fmhajit_specs)
fmhajit_llvm(fmhajit_compiler_cache support)
