// libFuzzer target `journal_record`: fuzz/fuzz_targets.hpp FuzzJournalRecord.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzJournalRecord)
