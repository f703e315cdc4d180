// libFuzzer target `searcher_reply`: fuzz/fuzz_targets.hpp FuzzSearcherReply.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzSearcherReply)
