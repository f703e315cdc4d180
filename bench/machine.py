"""The machine a benchmark ran on, for its JSON output (same shape as bench/machine.hpp)."""
import os


def machine():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cores": os.cpu_count(), "cpu_model": model}
