// libFuzzer target `report_line`: fuzz/fuzz_targets.hpp FuzzReportLine.
#include "fuzz/fuzz_main.hpp"

TUNEBUS_FUZZ_MAIN(FuzzReportLine)
