#!/usr/bin/env bash
# Fails if any C++ file is not clang-formatted (.clang-format at the root). abi/pjrt_c_api.h is
# excluded: its layout mirrors the ABI's declaration order and is kept by hand.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KILN_ROOT"
mapfile -t files < <(git ls-files '*.cc' '*.h' | grep -v '^abi/')
if ! clang-format --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
  clang-format --dry-run "${files[@]}" 2>&1 | grep -E '^[^ ].*warning' | cut -d: -f1 | sort -u >&2
  kiln_die "the files above are not clang-formatted; run: clang-format -i \$(git ls-files '*.cc' '*.h' | grep -v '^abi/')"
fi
kiln_log "format: ${#files[@]} files clang-formatted"
