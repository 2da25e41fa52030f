#!/usr/bin/env bash
# format.sh [--check]: clang-format-22 over every C++ file git tracks.
# Without --check it rewrites them in place; with it, it changes nothing and
# exits 1 naming each file that is not formatted (.clang-format: LLVM style).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
readonly kClangFormat=${CLANG_FORMAT:-clang-format-22}
if ! command -v "$kClangFormat" >/dev/null; then
  echo "error: $kClangFormat not found: apt-get install clang-format-22 (scripts/setup-and-run.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = --check ]; then
  exec "$kClangFormat" --dry-run -Werror "${files[@]}"
fi
"$kClangFormat" -i "${files[@]}"
