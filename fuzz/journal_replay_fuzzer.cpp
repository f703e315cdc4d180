// libFuzzer target `journal_replay`: fuzz/fuzz_targets.hpp FuzzJournalReplay.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzJournalReplay)
