#!/bin/sh
# Runs tests/python with the given interpreter's pytest; exit 77 (ctest's SKIPPED) without pytest.
python="${1:-/usr/bin/python3}"
cd "$(dirname "$0")" || exit 1
"$python" -c "import pytest" 2>/dev/null || { echo "no pytest for $python: skipped"; exit 77; }
exec "$python" -m pytest -q -p no:cacheprovider .
