#!/usr/bin/env bash
# Checks a built libkiln_pjrt.so:
#   1. its dynamic symbol table defines exactly one symbol, GetPjrtApi, a global function;
#   2. it does not depend on libpython (the plugin must load into any interpreter);
#   3. it does not depend on libstdc++/libgcc_s (linked statically), unless
#      --allow-shared-libstdcxx is given (sanitizer builds).
# Usage: scripts/check_exports.sh path/to/libkiln_pjrt.so [--allow-shared-libstdcxx]
# Run by ctest (test "pjrt_exports"), by `cmake --build <dir> --target check-exports`, and after
# linking in the wheel build.
set -euo pipefail

lib="${1:?usage: $0 path/to/libkiln_pjrt.so [--allow-shared-libstdcxx]}"
allow_shared_cxx=0
[[ "${2:-}" == "--allow-shared-libstdcxx" ]] && allow_shared_cxx=1

fail() { echo "check_exports: FAIL: $lib: $*" >&2; exit 1; }
[[ -f "$lib" ]] || fail "no such file"

# 1. Exported (defined, dynamic) symbols. nm -D lists version-definition names as absolute 'A'
#    symbols; there are none with the anonymous version script, but ignore them to be safe.
exported="$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sort -u)"
if [[ "$exported" != "GetPjrtApi" ]]; then
  n=$(printf '%s\n' "$exported" | grep -c . || true)
  fail "must export exactly GetPjrtApi, exports $n symbol(s):
$(printf '%s\n' "$exported" | head -n 40)"
fi
# ... and it is a global function (not data, not weak).
readelf --dyn-syms -W "$lib" | awk '$8 == "GetPjrtApi" || $8 ~ /^GetPjrtApi@/' \
  | grep -Eq 'FUNC +GLOBAL +DEFAULT' || fail "GetPjrtApi is not a GLOBAL DEFAULT FUNC"

# 2./3. Shared-library dependencies.
needed="$(readelf -d -W "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
if grep -qi 'libpython' <<<"$needed"; then
  fail "depends on libpython:
$needed"
fi
if (( ! allow_shared_cxx )) && grep -Eq '^(libstdc\+\+|libgcc_s)' <<<"$needed"; then
  fail "depends on a shared libstdc++/libgcc_s (expected -static-libstdc++ -static-libgcc):
$needed"
fi

echo "check_exports: OK: $lib exports only GetPjrtApi; needs: ${needed//$'\n'/ }"
