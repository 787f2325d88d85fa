#!/usr/bin/env bash
# Builds the manylinux wheel (scripts/build_wheel.sh) and checks it as a user would meet it:
#   1. every shared library in the wheel needs (readelf NEEDED) only glibc (libc, libm, libpthread,
#      libdl, librt, the loader), libstdc++, libgcc_s, or a library bundled in kiln_pjrt.libs/;
#   2. installed into a fresh virtualenv (build/wheel-smoke/, jax==jaxlib==0.10.2 from PyPI), ldd
#      resolves the plugin's dependencies to exactly those, and the smoke suite
#      (tests/compat/smoke.py: jit, matmul, linalg solve, grad, callbacks, DLPack, ... against the
#      CPU backend) passes;
#   3. the smoke suite passes with the oldest supported jaxlib too (tools/compat_grid, its venv
#      cached in build/compat/).
# A few minutes when the build trees and pip's cache are warm. Run by ./test.sh.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KILN_ROOT"

scripts/build_wheel.sh
wheel="$(ls build/wheelhouse/kiln_pjrt-*manylinux*.whl)"
kiln_prune_build build/manylinux  # the wheel's own build tree; the wheel is in build/wheelhouse

# The libraries a manylinux wheel may take from the system (besides its own bundled ones).
allowed='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2)$'

unpacked="build/wheel-smoke/unpacked"
rm -rf build/wheel-smoke
mkdir -p "$unpacked"
"$KILN_PY" -m zipfile -e "$wheel" "$unpacked"
bundled="$(cd "$unpacked" && ls kiln_pjrt.libs 2>/dev/null || true)"
status=0
while IFS= read -r lib; do
  while IFS= read -r need; do
    if ! grep -Eq "$allowed" <<<"$need" && ! grep -Fxq "$need" <<<"$bundled"; then
      echo "[wheel] ${lib#"$unpacked"/} needs $need, which is neither allowed nor bundled" >&2
      status=1
    fi
  done < <(readelf -d -W "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done < <(find "$unpacked" -name '*.so*' -type f)
((status == 0)) || kiln_die "the wheel's libraries need something outside the wheel"
bash scripts/check_exports.sh "$unpacked/kiln/libkiln_pjrt.so"
kiln_log "wheel: NEEDED entries are glibc, libstdc++, libgcc or bundled ($(echo "$bundled" | xargs))"

# A fresh venv: nothing but the wheel and JAX from PyPI.
tools/compat_grid --wheel "$wheel" --venvs build/wheel-smoke 0.10.2
plugin="$(build/wheel-smoke/0.10.2/venv/bin/python -c 'import kiln; print(kiln.library_path())')"
resolved="$(ldd "$plugin")"
echo "$resolved" | sed 's/^/[ldd] /'
if grep -q "not found" <<<"$resolved"; then
  kiln_die "ldd: an unresolved dependency in the installed wheel"
fi
libs_dir="$(realpath "$(dirname "$plugin")/../kiln_pjrt.libs")/"
while read -r name _ path _; do
  [[ "$name" == linux-vdso* || "$name" == /* ]] && continue
  path="$(realpath -m "$path")"
  if ! grep -Eq "$allowed" <<<"$name" && [[ "$path" != "$libs_dir"* ]]; then
    kiln_die "ldd: $name resolves to $path, outside the wheel"
  fi
done <<<"$resolved"
kiln_log "wheel: installed in a fresh venv, ldd resolves only to the system's glibc/libstdc++/libgcc and kiln_pjrt.libs/"

# The oldest jaxlib Kiln supports (python/kiln/_compat.py).
oldest="$("$KILN_PY" -c 'import sys; sys.path.insert(0, "python"); from kiln._compat import SUPPORTED_JAXLIB as s; print(".".join(map(str, s[0])))')"
tools/compat_grid --wheel "$wheel" "$oldest"
kiln_log_disk "after the wheel checks"
kiln_prune_build build/wheel-smoke
kiln_prune_build build/compat
