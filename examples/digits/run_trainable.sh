# Runs train.py with a Python that has scikit-learn (the trainable command of experiment.yaml).
# Tries $TUNEBUS_PYTHON, then /usr/bin/python3, then python3 on PATH; exits 127 naming them if
# none can import sklearn.
here=$(dirname "$0")
for py in "${TUNEBUS_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$py" ] || continue
  if command -v "$py" >/dev/null 2>&1 && "$py" -c "import importlib.util as u, sys; sys.exit(u.find_spec('sklearn') is None)" >/dev/null 2>&1; then
    exec "$py" "$here/train.py" "$@"
  fi
done
echo "run_trainable.sh: no Python with scikit-learn found (tried \$TUNEBUS_PYTHON, /usr/bin/python3, python3)" >&2
exit 127
