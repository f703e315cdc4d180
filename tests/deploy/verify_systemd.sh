#!/usr/bin/env bash
# Checks deploy/systemd (docs/how-to/deploy.md, "On hosts with systemd"); ctest runs it as
# deploy.systemd_verify:
#   1. installs what deploy/systemd/install.cmake installs into a temporary root (a CMake project
#      that includes only that file, `DESTDIR=<root> cmake --install --prefix /usr`) and checks
#      that every file lands where the package puts it;
#   2. puts executable placeholders where the package installs the binaries (/usr/bin/tunebus-*
#      for the build's targets checkpoint-store, resource-manager, scheduler, trial-worker; and
#      /usr/bin/kill of procps for ExecReload=) and the host's own units (sysinit.target, ...)
#      into that root, and runs `systemd-analyze verify --root` on every unit (the template as
#      instance tunebus-trial-worker@0). It fails on any message, not only on a non-zero exit:
#      systemd only warns about a misspelt key or value and ignores it;
#   3. `systemd-sysusers --root` makes the user tunebus from the installed tunebus.conf;
#   4. every tunebus unit the units name (After=, PartOf=, WantedBy=) is shipped, every WantedBy=
#      target exists (systemd-analyze does not read [Install]), every EnvironmentFile= without a
#      specifier is an installed env file, and every TUNEBUS_* variable the units (Environment=)
#      and env files (VAR=, also commented out) set is a flag's envname() in services/ or libs/.
# Usage: bash tests/deploy/verify_systemd.sh [SOURCE_DIR]. Exit 0: all good; 1: a check failed
# (what and why on stderr); 77 (ctest's SKIPPED): no systemd-analyze or systemd-sysusers (Debian
# package systemd, in scripts/install-deps' test group), which fails instead under CI=true.
set -euo pipefail

src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
for tool in systemd-analyze systemd-sysusers cmake; do
  if ! command -v "$tool" >/dev/null; then
    [ "${CI:-}" = true ] && { echo "CI=true but there is no $tool (Debian package systemd)" >&2; exit 1; }
    echo "no $tool (Debian package systemd): skipped"
    exit 77
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tunebus-systemd-verify-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
unit_dir=$root/usr/lib/systemd/system
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

units=(tunebus.target tunebus-checkpoint-store.service tunebus-resource-manager.service
  tunebus-scheduler.service tunebus-trial-worker@.service)
env_files=(checkpoint-store.env resource-manager.env scheduler.env trial-worker.env)

# 1. The install rules alone, into the temporary root (merged /usr, as Debian 12).
mkdir -p "$tmp/project" "$root/usr/bin" "$unit_dir"
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
cat >"$tmp/project/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.22)
project(tunebus_systemd_install LANGUAGES NONE)
include("$src/deploy/systemd/install.cmake")
EOF
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$tmp/project" -B "$tmp/build" "${generator[@]}" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log" >&2; fail "configuring a project with deploy/systemd/install.cmake"; exit 1; }
DESTDIR=$root cmake --install "$tmp/build" --prefix /usr >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "DESTDIR install of deploy/systemd/install.cmake"; exit 1; }
expected=("${units[@]/#/usr/lib/systemd/system/}" usr/lib/sysusers.d/tunebus.conf
  "${env_files[@]/#/etc/tunebus/}")
for f in "${expected[@]}"; do
  [ -f "$root/$f" ] || fail "install.cmake does not install /$f"
done
echo "installed: $(grep -c '^-- Installing' "$tmp/install.log") files into $root"

# 2. systemd-analyze verify, with the binaries the units start and the host's units they need.
for target in checkpoint-store resource-manager scheduler trial-worker; do
  printf '#!/bin/sh\n' >"$root/usr/bin/tunebus-$target"
done
printf '#!/bin/sh\n' >"$root/usr/bin/kill"
chmod +x "$root"/usr/bin/*
for host_unit in /usr/lib/systemd/system/*; do
  case "$(basename "$host_unit")" in tunebus*) continue ;; esac  # a tunebus package on the host
  [ -e "$unit_dir/$(basename "$host_unit")" ] || cp -a "$host_unit" "$unit_dir/"
done
to_verify=()
for u in "${units[@]}"; do to_verify+=("$unit_dir/${u/@./@0.}"); done
set +e
out=$(systemd-analyze verify --root="$root" --man=no --generators=no "${to_verify[@]}" 2>&1)
rc=$?
set -e
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  fail "systemd-analyze verify (exit $rc):"$'\n'"$out"
else
  echo "systemd-analyze verify --root: ${#to_verify[@]} units, no message"
fi

# 3. The user.
set +e
out=$(systemd-sysusers --root="$root" "$root/usr/lib/sysusers.d/tunebus.conf" 2>&1)
rc=$?
set -e
if [ $rc -ne 0 ] || ! grep -q '^tunebus:x:[0-9]*:[0-9]*:[^:]*:/var/lib/tunebus:' "$root/etc/passwd"; then
  fail "systemd-sysusers (exit $rc) did not make the user tunebus:"$'\n'"$out"
else
  echo "systemd-sysusers: $(grep '^tunebus:' "$root/etc/passwd")"
fi

# 4. Names the units and env files use.
cd "$src/deploy/systemd"
for name in $(grep -ohE 'tunebus[-a-z0-9@]*\.(service|target)' "${units[@]}" | sort -u); do
  template=$(sed -E 's/@[^.]+\./@./' <<<"$name")
  [ -f "$template" ] || fail "a unit names $name, which deploy/systemd does not ship"
done
for name in $(grep -ohE '^WantedBy=.*' "${units[@]}" | sed 's/^WantedBy=//' | tr ' ' '\n' | sort -u); do
  [ -f "$unit_dir/$name" ] || fail "[Install] WantedBy=$name, a unit neither systemd nor we ship"
done
for f in $(grep -ohE '^EnvironmentFile=-?/etc/tunebus/[^%]*$' "${units[@]}" | sed -E 's/^EnvironmentFile=-?//' | sort -u); do
  [ -f "$root$f" ] || fail "a unit reads $f, which install.cmake does not install"
done
for var in $( (grep -ohE '^Environment=TUNEBUS_[A-Z0-9_]+=' "${units[@]}" | sed 's/^Environment=//'
  grep -ohE '^#?TUNEBUS_[A-Z0-9_]+=' "${env_files[@]/#/env/}") | tr -d '#=' | sort -u); do
  grep -rqF "envname(\"$var\")" "$src/services" "$src/libs" ||
    fail "deploy/systemd names $var, which no flag reads (envname in services/ or libs/)"
done

[ $failures -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "deploy/systemd: ok"
