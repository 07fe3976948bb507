#!/usr/bin/env bash
# Builds the core, the calibration kernels and the doctest suite with sanitizers and runs the suite. Usage:
#
#   scripts/sanitize.sh [address,undefined | thread] [doctest options...]     default: address,undefined
#
# Build folders: build/asan (address,undefined) and build/tsan (thread); CMake option ROOFLINE_SANITIZE (top-level
# CMakeLists.txt; presets asan-ubsan and tsan in CMakePresets.json). Every report is fatal: -fno-sanitize-recover=all,
# halt_on_error, LeakSanitizer on. The default compiler (GCC on Debian; CXX=clang++ for clang): the build adds
# float-cast-overflow to "undefined", which GCC leaves out.
set -euo pipefail
cd "$(dirname "$0")/.."

SAN="${1:-address,undefined}"
shift || true
case "$SAN" in
  thread) BUILD=build/tsan ;;
  *) BUILD=build/asan ;;
esac
CXX_ARG=()
[ -n "${CXX:-}" ] && CXX_ARG=(-DCMAKE_CXX_COMPILER="$CXX")
echo "== sanitize: $SAN in $BUILD (${CXX:-default compiler})"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROOFLINE_SANITIZE="$SAN" -DROOFLINE_BUILD_CUDA=OFF \
  "${CXX_ARG[@]}" >/dev/null
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target roofline_tests

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
"$BUILD/roofline_tests" "$@"
