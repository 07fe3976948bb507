#!/usr/bin/env bash
# Installs whatever is missing on a fresh Debian/Ubuntu machine, then builds and installs rooflinepy.
# System packages come from apt, Python packages from pip. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(cmake ninja-build g++ libeigen3-dev nlohmann-json3-dev doctest-dev clang)  # clang: sanitizers, fuzzing
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} with apt-get"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
# mypy and pybind11-stubgen are pinned: scripts/generate.py --check compares the stubs this stubgen writes with the
# committed ones, and mypy --strict must pass the same way everywhere
"$PYTHON" -m pip install -q --disable-pip-version-check \
  "scikit-build-core>=0.8" "pybind11>=2.11" "numpy>=1.22" "pandas>=1.4" "matplotlib>=3.5" \
  "pytest>=7" "hypothesis>=6" "jsonschema>=4" "gguf>=0.10" "nbclient>=0.7" "nbformat>=5" "ipykernel>=6" \
  "pyarrow>=10" "ipywidgets>=8" "mypy==2.4.1" "pybind11-stubgen==3.0.0" 2>&1 | grep -v "Running pip as the 'root' user" || true
echo "setup: building and installing rooflinepy"
"$PYTHON" -m pip install -q --disable-pip-version-check --no-build-isolation . 2>&1 \
  | grep -v "Running pip as the 'root' user" || true
"$PYTHON" -c "import rooflinepy; print('setup: rooflinepy', rooflinepy.__version__, 'with', len(rooflinepy.devices()), 'devices')"
