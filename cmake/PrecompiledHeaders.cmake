# Precompiled headers for the targets that compile many translation units one by one (the tests,
# the fuzz targets' bodies): the third-party headers nearly all their files include (GoogleTest,
# nlohmann/json, fmt, msgpack, spdlog, cppzmq, and the standard headers) are parsed once per target
# instead of once per file (CMake's target_precompile_headers; docs/performance.md "Build time").
# The libraries and services are unity builds (CMAKE_UNITY_BUILD in the root CMakeLists.txt): a
# batch of 8 files parses them once already. OFF: every file parses its own includes (a missing
# #include shows).
option(TUNEBUS_PCH "Precompile the third-party headers of the tests and the fuzz targets" ON)

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
