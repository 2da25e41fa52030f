#!/usr/bin/env bash
# setup-and-run.sh demo|test|sanitize: on Debian 12, install whatever
# fmhajit's build needs and is missing, build into build/ (the binary is
# build/bin/fmhajit), then run `fmhajit demo` or every test (GoogleTest and
# lit, through ctest). `sanitize` builds into build-asan/ with
# AddressSanitizer and UndefinedBehaviorSanitizer (-DFMHAJIT_SANITIZE=ON) and
# runs every test there (docs/design.md, Testing): about 30 minutes on two
# cores, so CI's `test` leaves it out.
#
# Idempotent: installed packages are left alone (apt-get update runs only
# when something is missing) and a second build only rebuilds what changed.
# FMHAJIT_BUILD_DIR (default build), FMHAJIT_ASAN_BUILD_DIR (default
# build-asan) and FMHAJIT_JOBS (default: every core) change where and how
# wide it builds.
set -euo pipefail

readonly kBuildDir=${FMHAJIT_BUILD_DIR:-build}
readonly kAsanBuildDir=${FMHAJIT_ASAN_BUILD_DIR:-build-asan}
readonly kJobs=${FMHAJIT_JOBS:-$(nproc)}

readonly kPackages=(
  llvm-22-dev clang-22 lld-22 liblld-22-dev libclang-22-dev llvm-22-tools
  libclang-rt-22-dev libgtest-dev libzstd-dev libopenblas-dev clang-format-22
  ninja-build cmake python3
  # The Python module (python/, docs/python.md) and its tests.
  python3-dev pybind11-dev libdlpack-dev python3-numpy python3-pytest
)

usage() {
  echo "usage: $0 demo|test|sanitize" >&2
  exit 2
}

# Installs the packages of kPackages that dpkg does not list as installed.
install_missing() {
  local missing=()
  local pkg status
  for pkg in "${kPackages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ $status == *"ok installed"* ]] || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "== all build dependencies are installed"
    return
  fi
  echo "== installing: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: run as root to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

# build DIR [CMAKE_ARGS...]: configures and builds everything into DIR.
build() {
  local dir=$1
  shift
  echo "== building into $dir/"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 "$@"
  ninja -C "$dir" -j"$kJobs"
}

# run_tests DIR: every test of the build in DIR.
run_tests() {
  (cd "$1" && ctest --output-on-failure -j"$kJobs")
}

# The sanitizer pass: its own build directory, every test under ASan+UBSan.
sanitize() {
  build "$kAsanBuildDir" -DFMHAJIT_SANITIZE=ON
  echo "== running every test under AddressSanitizer and UndefinedBehaviorSanitizer"
  run_tests "$kAsanBuildDir"
}

main() {
  [ $# -eq 1 ] || usage
  case "$1" in
    demo | test | sanitize) ;;
    *) usage ;;
  esac
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  install_missing
  if [ "$1" = sanitize ]; then
    sanitize
    return
  fi
  build "$kBuildDir"
  if [ "$1" = demo ]; then
    exec "$kBuildDir/bin/fmhajit" demo
  fi
  echo "== running every test"
  run_tests "$kBuildDir"
}

main "$@"
