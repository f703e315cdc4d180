// libFuzzer target `message`: fuzz/fuzz_targets.hpp FuzzMessage.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzMessage)
