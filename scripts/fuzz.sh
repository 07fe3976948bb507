#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, CMake option ROOFLINE_FUZZ, clang) and runs each one after the other for a
# bounded time, then prints the executions per target. Usage:
#
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]      targets: gguf device hf_config model_entry profile
#   FUZZ_RUNS=1000000 scripts/fuzz.sh 3600 gguf                        stop at 10^6 executions (or the time limit)
#   FUZZ_SEEDS_ONLY=1 scripts/fuzz.sh 20                                CI: start from the committed corpus only
#
# Caps (fuzz/README.md): no single allocation above 256 MB (-malloc_limit_mb), at most 2048 MB resident
# (-rss_limit_mb), at most 10 s for one input (-timeout); leaks are reported (ASan's LeakSanitizer). Each
# target keeps what it learns in build/fuzz/work/<target> (grown across runs unless FUZZ_SEEDS_ONLY=1); the seed
# corpus fuzz/corpus/<target> is only read. A crashing input is written to build/fuzz/artifacts/<target>/: fix the
# bug, then keep the input in fuzz/regressions/<target>/ (tests/cpp/test_fuzz_regressions.cpp replays it).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(gguf device hf_config model_entry profile)
MALLOC_LIMIT_MB=256
RSS_LIMIT_MB=2048
TIMEOUT_S=10
declare -A MAX_LEN=([gguf]=32768 [device]=8192 [hf_config]=4096 [model_entry]=4096 [profile]=16384)

# clang with libFuzzer (Debian/Ubuntu: clang and libclang-rt-<version>-dev), installed when missing.
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: installing clang with apt-get"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang >/dev/null
fi
CLANG_MAJOR="$(clang++ -dumpversion | cut -d. -f1)"
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
     clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz: installing libclang-rt-${CLANG_MAJOR}-dev (libFuzzer) with apt-get"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "libclang-rt-${CLANG_MAJOR}-dev" >/dev/null
fi

BUILD=build/fuzz
echo "== fuzz: building ${TARGETS[*]} in $BUILD (clang $(clang++ -dumpversion), -fsanitize=fuzzer,address,undefined)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROOFLINE_FUZZ=ON \
  -DROOFLINE_BUILD_TESTS=OFF -DROOFLINE_BUILD_CUDA=OFF >/dev/null
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target $(printf 'fuzz_%s ' "${TARGETS[@]}")

failed=()
summary=()
for t in "${TARGETS[@]}"; do
  work="$BUILD/work/$t"
  artifacts="$BUILD/artifacts/$t"
  [ "${FUZZ_SEEDS_ONLY:-0}" = 1 ] && rm -rf "$work"
  mkdir -p "$work" "$artifacts"
  log="$BUILD/fuzz_$t.log"
  args=(-max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb="$RSS_LIMIT_MB" -malloc_limit_mb="$MALLOC_LIMIT_MB"
        -timeout="$TIMEOUT_S" -max_len="${MAX_LEN[$t]}" -dict="fuzz/$t.dict" -print_final_stats=1
        -artifact_prefix="$artifacts/")
  [ -n "${FUZZ_RUNS:-}" ] && args+=(-runs="$FUZZ_RUNS")
  echo "== fuzz: $t for at most ${SECONDS_PER_TARGET} s${FUZZ_RUNS:+ or $FUZZ_RUNS executions}"
  set +e
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$BUILD/fuzz_$t" "${args[@]}" "$work" "fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | awk '{print $2}')"
  secs="$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | tail -1 | awk '{print $2}')"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')"
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "fuzz: $t FAILED (exit $rc); the end of $log:"
    tail -40 "$log"
  fi
  summary+=("$(printf '%-12s %12s executions  %8s exec/s  coverage %6s  %s' "$t" "${execs:-?}" "${secs:-?}" "${cov:-?}" \
              "$([ "$rc" -eq 0 ] && echo ok || echo "CRASH: see $artifacts")")")
done

echo "== fuzz: executions per target (caps: ${MALLOC_LIMIT_MB} MB per allocation, ${RSS_LIMIT_MB} MB resident, ${TIMEOUT_S} s per input)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
