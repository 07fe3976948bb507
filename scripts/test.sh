#!/usr/bin/env bash
# Sets up whatever is missing, then runs every test: the C++ doctest suite (ctest, warnings as errors) and
# pytest (API, CLI, properties, validation against published measurements).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

JOBS="${JOBS:-$(nproc)}"
echo "== C++ core: build with warnings as errors, run doctest through ctest"
cmake -S . -B build/tests -G Ninja -DCMAKE_BUILD_TYPE=Release -DROOFLINE_WERROR=ON >/dev/null
cmake --build build/tests -j "$JOBS"
ctest --test-dir build/tests --output-on-failure -j "$JOBS"

# ---- the C++ package (issue 16): install, remove the build tree, move the prefix, build a consumer against it ----
echo "== C++ package: find_package(roofline) from a moved install finds the installed data"
scripts/test_install.sh

echo "== Python: pytest"
# Run from outside the source tree so the installed package, not the checkout, is imported.
REPO="$PWD"
(cd /tmp && python3 -m pytest "$REPO/tests/python" "$REPO/tests/validation" -q -p no:cacheprovider)

# ---- typed Python (issue 12, item 7): generated files up to date, mypy --strict, the typed README tour ----
# ---- the fitted engine defaults (issue 13): calibration/fit_defaults.py reproduces every committed value ----
echo "== Engine defaults: refit to the calibration corpus and compare with engine_db"
python3 calibration/fit_defaults.py --check
echo "== Vulkan GEMM efficiency: derived again from its kernel microbenchmarks and compared with engine_db"
python3 calibration/vulkan_mul_mat.py --check
echo "== Residual checks: what one MMQ cost can reach; the Metal engines by chip generation (figures, not gates)"
python3 calibration/residual_checks.py mmq-bound
python3 calibration/residual_checks.py metal-generations

echo "== Typed Python: generated files, mypy --strict, the README tour"
python3 scripts/generate.py --check
python3 -m mypy --strict python/rooflinepy examples/readme_tour.py calibration/fit_defaults.py calibration/vulkan_mul_mat.py \
  calibration/residual_checks.py
(cd /tmp && python3 "$REPO/examples/readme_tour.py")

# ---- notebooks (issue 5): execute every notebooks/*.ipynb top to bottom from a temp dir; any error fails ----
echo "== Notebooks: nbclient"
python3 scripts/run_notebooks.py --timeout 120

# ---- robustness (issue 7): the doctest suite under ASan + UBSan, then every fuzz target for a bounded time ----
# Any sanitizer report fails the run (-fno-sanitize-recover=all). ROOFLINE_SANITIZE=thread builds the same suite
# under TSan (scripts/sanitize.sh thread). Fuzzing starts from the committed corpus (fuzz/corpus) only; the caps
# (256 MB per allocation, 2 GB resident, 10 s per input) are in fuzz/README.md. FUZZ_SECONDS=0 skips it.
echo "== C++ core under ASan + UBSan: doctest"
scripts/sanitize.sh address,undefined
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  echo "== Fuzzing: each target for ${FUZZ_SECONDS:-20} s from the committed corpus"
  FUZZ_SEEDS_ONLY=1 scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
fi
