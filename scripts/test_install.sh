#!/usr/bin/env bash
# The C++ package as a user installs it: build and `cmake --install` the core, remove the build tree, move the
# install prefix elsewhere, then build tests/consumer against it with find_package(roofline) and run it. The
# consumer must find the installed hardware_db/, engine_db/ and model_db/ at the moved prefix (it prints where),
# not the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cmake -S "$SRC" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DROOFLINE_BUILD_TESTS=OFF \
  -DROOFLINE_BUILD_CUDA=OFF -DCMAKE_INSTALL_PREFIX="$WORK/prefix" >/dev/null
cmake --build "$WORK/build" -j "${JOBS:-$(nproc)}" >/dev/null
cmake --install "$WORK/build" >/dev/null
rm -rf "$WORK/build"
mv "$WORK/prefix" "$WORK/moved"
for db in hardware_db engine_db model_db; do
  [ -d "$WORK/moved/share/roofline/$db" ] || { echo "test_install: share/roofline/$db not installed"; exit 1; }
done
cmake -S "$SRC/tests/consumer" -B "$WORK/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/moved" >/dev/null
cmake --build "$WORK/consumer" >/dev/null
out="$("$WORK/consumer/consumer")"
echo "$out"
case "$out" in
  *"data directory: $WORK/moved/share/roofline"*) echo "test_install: ok (the moved install's data)";;
  *) echo "test_install: the consumer did not use the installed data at $WORK/moved"; exit 1;;
esac
