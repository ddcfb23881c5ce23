# bench_numerics: MXU tile kernels (and a tiled 1024^3 GEMM) in GMAC/s, side by side with
# oneDNN's int8 and fp32 GEMMs when libdnnl-dev is installed. Included from bench/CMakeLists.txt.
add_executable(bench_numerics ${CMAKE_CURRENT_LIST_DIR}/numerics_bench.cpp)
target_link_libraries(bench_numerics PRIVATE vtpu_numerics benchmark::benchmark)
set_target_properties(bench_numerics PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
# Found by library and header, not by Debian's dnnl-config.cmake: that file calls a REQUIRED
# find_package(OpenCL), which fails configure (QUIET does not reach it) on a machine without
# ocl-icd-opencl-dev, a Recommends that --no-install-recommends leaves out. A benchmark-only
# dependency must never break the build.
find_library(VTPU_DNNL_LIB dnnl)
find_path(VTPU_DNNL_INCLUDE oneapi/dnnl/dnnl.h)
find_package(OpenMP QUIET)
if(VTPU_DNNL_LIB AND VTPU_DNNL_INCLUDE AND OpenMP_CXX_FOUND)
  target_include_directories(bench_numerics SYSTEM PRIVATE ${VTPU_DNNL_INCLUDE})
  target_link_libraries(bench_numerics PRIVATE ${VTPU_DNNL_LIB} OpenMP::OpenMP_CXX)
  target_compile_definitions(bench_numerics PRIVATE VTPU_HAVE_DNNL=1)
  set(VTPU_HAVE_DNNL ON)
  message(STATUS "bench_numerics: comparing against oneDNN (${VTPU_DNNL_LIB})")
else()
  set(VTPU_HAVE_DNNL OFF)
  message(STATUS "bench_numerics: oneDNN not found (apt-get install libdnnl-dev); own kernels only")
endif()
