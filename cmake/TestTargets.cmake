# How the test targets compile (tunebus_test_target: unit_tests, process_tests, the fuzz targets'
# bodies), which compile many translation units one by one. Precompiled headers: the third-party
# headers nearly all their files include (GoogleTest, nlohmann/json, fmt, msgpack, spdlog, cppzmq,
# and the standard headers) are parsed once per target instead of once per file (CMake's
# target_precompile_headers; docs/explanation/performance/build-time.md). The libraries and services are
# unity builds (CMAKE_UNITY_BUILD in the root CMakeLists.txt): a batch of up to 32 files parses
# them once already. OFF: every file parses its own includes (a missing #include shows).
option(TUNEBUS_PCH "Precompile the third-party headers of the tests and the fuzz targets" ON)

# The tests' own code (not the libraries and services they link, nor the benchmarks) is compiled
# at -O1 in a Release build: most of a test file's compile time is optimising GoogleTest's and its
# assertions' code, which the tests do not need fast (tests/unit/asha_scheduler_test.cpp: 11.7 s
# of CPU at -O3, 9.7 s at -O1). Empty: the build type's own level.
set(TUNEBUS_TEST_OPTIMIZATION "-O1" CACHE STRING
  "Optimisation of the tests' and fuzz targets' own files in a Release build")

# tunebus_test_target(TARGET HEADER...): TARGET's files are compiled with HEADER... precompiled
# (tunebus_precompile_headers) and at TUNEBUS_TEST_OPTIMIZATION in a Release build.
# With GCC, -Warray-bounds, -Wstringop-overflow and -Wstringop-overread are off for them: GCC 12
# reports std::string's inlined memcpy out of bounds in tests that build expected strings with
# operator+ (e.g. `Lines{std::string("checkpoint 12 not stored: ") + kDiskFull}` in
# tests/unit/show_trial_test.cpp at -O1; GCC bugs 105329 and 105651), which -Werror turns into a
# failed build. The libraries and services keep the three warnings.
function(tunebus_test_target target)
  tunebus_precompile_headers(${target} ${ARGN})
  if(TUNEBUS_TEST_OPTIMIZATION)
    target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:${TUNEBUS_TEST_OPTIMIZATION}>)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
      -Wno-stringop-overread)
  endif()
endfunction()

# tunebus_precompile_headers(TARGET HEADER...): TARGET's files are compiled with HEADER...
# precompiled (angle-bracket names), when TUNEBUS_PCH is ON. The target must link tunebus_proto
# when a header is <msgpack.hpp> (its MSGPACK_NO_BOOST keeps Boost out).
function(tunebus_precompile_headers target)
  if(TUNEBUS_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# What the fuzz targets' files include, nearly all of them; the tests' add GoogleTest.
set(TUNEBUS_PCH_HEADERS <nlohmann/json.hpp> <fmt/format.h> <msgpack.hpp> <zmq.hpp>
  <spdlog/spdlog.h> <string> <vector> <map> <memory> <optional> <functional> <chrono> <thread>
  <filesystem>)
set(TUNEBUS_TEST_PCH_HEADERS <gtest/gtest.h> ${TUNEBUS_PCH_HEADERS})
