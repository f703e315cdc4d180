// libFuzzer target `snapshot`: fuzz/fuzz_targets.hpp FuzzSnapshot.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzSnapshot)
