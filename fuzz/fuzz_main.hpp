// The libFuzzer entry points of one fuzz target: TUNEBUS_FUZZ_MAIN(FuzzMessage) in
// fuzz/message_fuzzer.cpp defines LLVMFuzzerInitialize (logging off: the services' warnings
// about bad input would drown libFuzzer's status lines) and LLVMFuzzerTestOneInput (the body).
#pragma once

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_targets.hpp"

#define TUNEBUS_FUZZ_MAIN(body)                                             \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                      \
    spdlog::set_level(spdlog::level::off);                                  \
    return 0;                                                               \
  }                                                                         \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    return ::tunebus::fuzz::body(data, size);                               \
  }
