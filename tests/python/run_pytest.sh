#!/bin/sh
# Runs tests/python (or the test files named after the interpreter) with the given interpreter's
# pytest; exit 77 (ctest's SKIPPED) without pytest.
python="${1:-/usr/bin/python3}"
[ $# -gt 0 ] && shift
cd "$(dirname "$0")" || exit 1
# Under CI=true a missing pytest fails: a skip there would hide the whole Python suite.
if ! "$python" -c "import pytest" 2>/dev/null; then
  [ "${CI:-}" = true ] && { echo "CI=true but $python has no pytest (python3-pytest)"; exit 1; }
  echo "no pytest for $python: skipped"; exit 77
fi
[ $# -gt 0 ] || set -- .
exec "$python" -m pytest -q -p no:cacheprovider "$@"
