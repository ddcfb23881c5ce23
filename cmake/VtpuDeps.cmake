# Finds the third-party packages every part uses. Installed by scripts/install-deps.sh.
find_package(yaml-cpp REQUIRED)          # target yaml-cpp (no namespace in 0.7)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark QUIET)   # bench/ only: without it the benchmarks are left out, nothing else
find_package(PkgConfig REQUIRED)
pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET systemc)  # no CMake package; PkgConfig::SYSTEMC
find_package(Protobuf REQUIRED)  # before ONNX: its targets need protobuf::libprotobuf
find_package(ONNX REQUIRED)      # targets onnx, onnx_proto
# libcsv (Debian's libcsv-dev): RFC 4180 CSV. No CMake or pkg-config file: found by header and library.
find_path(VTPU_CSV_INCLUDE csv.h)
find_library(VTPU_CSV_LIB csv)
if(NOT VTPU_CSV_INCLUDE OR NOT VTPU_CSV_LIB)
  message(FATAL_ERROR "libcsv not found: run scripts/install-deps.sh (or apt-get install libcsv-dev)")
endif()
add_library(vtpu_libcsv INTERFACE)
target_include_directories(vtpu_libcsv SYSTEM INTERFACE ${VTPU_CSV_INCLUDE})
target_link_libraries(vtpu_libcsv INTERFACE ${VTPU_CSV_LIB})
