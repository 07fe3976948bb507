#!/usr/bin/env bash
# Builds roofline-calibrate-cuda and measures this machine's NVIDIA GPU in one go: the calibration profile goes
# to hardware_db/measured/<gpu>-<date>.json and, when $OUT is set (the device tool's output folder), to $OUT too,
# with the full log. Prints the measured/datasheet ratios last. Exit status: 0 all checks passed; 2 a kernel's
# output failed its check (profile written, those rows unverified); 124 out of time; anything else a failure.
#
#   scripts/device-calibrate.sh                  # full run: build + measure, about 2-4 minutes on an H200
#   scripts/device-calibrate.sh --quick          # smoke test (any option is passed to roofline-calibrate-cuda)
#   scripts/device-calibrate.sh --prepare-deps   # on a machine WITH the build dependencies: copy the header-only
#                                                # ones (Eigen, nlohmann/json) into build/device-deps, for a GPU
#                                                # machine that lacks them (carry build/device-deps there)
#
# Environment: ROOFLINE_CALIBRATE_LIMIT_S (total seconds for build + run, default 420), ROOFLINE_CUDA_BUILD_DIR
# (default build/device-cuda), ROOFLINE_CUDA_PREBUILT (a roofline-calibrate-cuda built elsewhere: used if the
# build fails, or instead of building when ROOFLINE_CUDA_SKIP_BUILD=1 and it starts), JOBS (default 16).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS=$ROOT/build/device-deps

if [ "${1:-}" = "--prepare-deps" ]; then
  set -e
  rm -rf "$DEPS"
  mkdir -p "$DEPS/include" "$DEPS/share/cmake" "$DEPS/share/eigen3"
  cp -r /usr/include/eigen3 "$DEPS/include/"
  cp -r /usr/include/nlohmann "$DEPS/include/"
  cp -r /usr/share/eigen3/cmake "$DEPS/share/eigen3/"
  cp -r /usr/share/cmake/nlohmann_json "$DEPS/share/cmake/"
  echo "device-calibrate: dependencies copied to $DEPS ($(du -sh "$DEPS" | cut -f1)); carry build/device-deps"
  exit 0
fi

START=$(date +%s)
LIMIT=${ROOFLINE_CALIBRATE_LIMIT_S:-420}
JOBS=${JOBS:-16}
BUILD=${ROOFLINE_CUDA_BUILD_DIR:-$ROOT/build/device-cuda}
LOGDIR=${OUT:-$BUILD}
mkdir -p "$LOGDIR" "$BUILD"
LOG=$LOGDIR/device-calibrate.log

elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( LIMIT - $(date +%s) + START )); }
say() { echo "device-calibrate [$(elapsed)s]: $*"; }
DMON_PID=""
cleanup() { if [ -n "$DMON_PID" ]; then kill "$DMON_PID" 2>/dev/null; wait "$DMON_PID" 2>/dev/null; fi; DMON_PID=""; }

main() {
trap cleanup EXIT
# ---- the GPU -------------------------------------------------------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  say "no NVIDIA GPU visible (nvidia-smi missing or failing); nothing to measure"
  exit 3
fi
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu \
  --format=csv > "$LOGDIR/nvidia-smi.csv" 2>&1
cat "$LOGDIR/nvidia-smi.csv"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -n1)
SLUG=$(echo "$GPU_NAME" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
DATE=$(date -u +%Y-%m-%d)
PROFILE_NAME="$SLUG-$DATE.json"
MEASURED_DIR=$ROOT/hardware_db/measured
mkdir -p "$MEASURED_DIR"
PROFILE=$MEASURED_DIR/$PROFILE_NAME
say "GPU '$GPU_NAME' -> $PROFILE"
command -v nvcc >/dev/null 2>&1 || export PATH=$PATH:/usr/local/cuda/bin
say "$(nvcc --version | tail -n 2 | head -n 1); $(cmake --version | head -n 1); host compiler $(c++ --version | head -n 1)"

# ---- build -------------------------------------------------------------------------------------------------------
[ -d /usr/local/cuda/lib64 ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
TOOL=$BUILD/cpp/calibration/cuda/roofline-calibrate-cuda
PREBUILT=${ROOFLINE_CUDA_PREBUILT:-}
[ -n "$PREBUILT" ] && [ "${PREBUILT#/}" = "$PREBUILT" ] && PREBUILT=$ROOT/$PREBUILT
if [ "${ROOFLINE_CUDA_SKIP_BUILD:-0}" = 1 ] && [ -x "$PREBUILT" ] && "$PREBUILT" --help >/dev/null 2>&1; then
  say "using the prebuilt $PREBUILT (ROOFLINE_CUDA_SKIP_BUILD=1)"
  TOOL=$PREBUILT
else
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
PREFIX=()
if [ -d "$DEPS" ]; then PREFIX=(-DCMAKE_PREFIX_PATH="$DEPS"); say "using carried dependencies in $DEPS"; fi
say "configure and build (limit $(left)s left)"
build_ok=1
timeout "$(left)" cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" "${PREFIX[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DROOFLINE_BUILD_TESTS=OFF -DROOFLINE_BUILD_PYTHON=OFF -DROOFLINE_BUILD_CUDA=ON || build_ok=0
if [ $build_ok = 1 ]; then
  timeout "$(left)" cmake --build "$BUILD" --target roofline-calibrate-cuda -j "$JOBS" || build_ok=0
fi
if [ $build_ok = 0 ] || [ ! -x "$TOOL" ]; then
  if [ -n "$PREBUILT" ] && [ -x "$PREBUILT" ]; then
    say "build failed; falling back to the prebuilt $PREBUILT"
    TOOL=$PREBUILT
  else
    say "build failed (see the log above)"
    exit 4
  fi
fi
say "tool: $TOOL"
fi

# ---- measure -------------------------------------------------------------------------------------------------------
if nvidia-smi dmon -h >/dev/null 2>&1; then
  nvidia-smi dmon -s pucm -d 1 > "$LOGDIR/dmon.log" 2>&1 &
  DMON_PID=$!
fi
RUN_LIMIT=$(( $(left) - 15 ))
if [ "$RUN_LIMIT" -lt 30 ]; then say "only ${RUN_LIMIT}s left for the run; giving up"; exit 124; fi
say "measuring (limit ${RUN_LIMIT}s)"
timeout --signal=INT --kill-after=10 "$RUN_LIMIT" "$TOOL" -o "$PROFILE" --datasheet auto \
  --hardware-db "$ROOT/hardware_db" "$@"
rc=$?
cleanup

if [ -f "$PROFILE" ] && [ -n "${OUT:-}" ]; then cp "$PROFILE" "$OUT/$PROFILE_NAME"; fi
case $rc in
  0) say "done: all checks passed; profile $PROFILE${OUT:+ (and \$OUT/$PROFILE_NAME)}" ;;
  2) say "done with FAILED CHECKS (exit 2): those measurements are unverified; profile $PROFILE" ;;
  124|137) say "OUT OF TIME after $(elapsed)s (exit $rc); the profile holds the groups that finished" ;;
  *) say "roofline-calibrate-cuda failed (exit $rc)" ;;
esac
say "total $(elapsed)s"
return $rc
}

main "$@" 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
