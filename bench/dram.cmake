# bench_dram: simulated bursts per second of the DRAM timing model (memory/) and the
# effective bandwidth it gives each preset. Included from bench/CMakeLists.txt.
add_executable(bench_dram ${CMAKE_CURRENT_LIST_DIR}/dram_bench.cpp)
target_link_libraries(bench_dram PRIVATE vtpu_memory vtpu_config benchmark::benchmark)
set_target_properties(bench_dram PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
