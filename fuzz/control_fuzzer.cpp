// libFuzzer target `control`: fuzz/fuzz_targets.hpp FuzzControl.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzControl)
