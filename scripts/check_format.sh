#!/usr/bin/env bash
# Fails if any C++ file is not clang-formatted (.clang-format at the root). abi/pjrt_c_api.h is
# excluded: its layout mirrors the ABI's declaration order and is kept by hand; so is third_party/
# (vendored libraries, kept as their authors wrote them).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KILN_ROOT"
mapfile -t files < <(git ls-files '*.cc' '*.h' | grep -v -e '^abi/' -e '^third_party/')
if ! clang-format --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
  clang-format --dry-run "${files[@]}" 2>&1 | grep -E '^[^ ].*warning' | cut -d: -f1 | sort -u >&2
  kiln_die "the files above are not clang-formatted; run: clang-format -i on them"
fi
kiln_log "format: ${#files[@]} files clang-formatted"
