# bench_rtl: simulated cycles per second of the Verilated MXU RTL on a fixed matmul stream
# (docs/rtl.md). Needs the models of rtl/ (add_subdirectory(rtl) before bench/). Included
# from bench/CMakeLists.txt.
if(TARGET vtpu_rtl_models)
  add_executable(bench_rtl ${CMAKE_CURRENT_LIST_DIR}/rtl_bench.cpp)
  target_link_libraries(bench_rtl PRIVATE vtpu_rtl_models vtpu_rtl_core_harness vtpu_rtl_compiled_programs vtpu_config vtpu_isa benchmark::benchmark)
  target_include_directories(bench_rtl PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  set_target_properties(bench_rtl PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
endif()
