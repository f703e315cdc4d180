// libFuzzer target `spec`: fuzz/fuzz_targets.hpp FuzzSpec.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzSpec)
