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
