include(GoogleTest)

# vtpu_add_gtest(NAME SOURCES ... LIBS ... LABELS ...)
# One executable; every TEST becomes its own CTest entry (own process), which SystemC
# needs (one elaboration per process) and which lets ctest -j spread the work.
function(vtpu_add_gtest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    VTPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}" VTPU_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()
