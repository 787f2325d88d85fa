# shellcheck shell=bash
# Shared helpers for Kiln's scripts; source it, don't run it.
# Every function is idempotent and cheap when there is nothing to do.

KILN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KILN_VENV="${KILN_VENV:-$KILN_ROOT/.venv}"
KILN_PY="$KILN_VENV/bin/python"
KILN_JOBS="${KILN_JOBS:-2}"

# One C++ compiler for every build. scikit-build-core uses $CXX, else Python's configured compiler
# (g++); plain cmake would pick /usr/bin/c++. Naming it once makes the wheel build and build/dev
# compile identical command lines, so ccache serves one from the other.
if [[ -z "${CXX:-}" ]] && command -v g++ >/dev/null; then export CXX=g++; fi
# ccache compares command lines with the paths under the repository made relative to each build
# directory, so the trees at equal depth (build/py3-none-*, build/dev, build/manylinux) hit each
# other's objects: on a fresh clone Kiln's Release objects are compiled once, not three times.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$KILN_ROOT}"

# Times are printed relative to the start of the outermost script (bash 5's EPOCHREALTIME, in µs).
export KILN_T0="${KILN_T0:-${EPOCHREALTIME/./}}"
_kiln_t0=$KILN_T0
kiln_log() {
  local us=$((${EPOCHREALTIME/./} - _kiln_t0))
  printf '[kiln %4d.%01ds] %s\n' $((us / 1000000)) $((us / 100000 % 10)) "$*"
}
kiln_die() { echo "[kiln] ERROR: $*" >&2; exit 1; }

# Runs "$@" with sudo unless we are root.
_kiln_as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else kiln_die "need root (or sudo) to run: $*"
  fi
}

# Installs the Debian packages in scripts/apt-packages.txt that are not installed yet.
# apt-get update runs only when something is missing, so reruns make no network calls.
kiln_ensure_apt_packages() {
  local pkgs=() missing=() p
  mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$KILN_ROOT/scripts/apt-packages.txt")
  for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then
    kiln_log "apt: all ${#pkgs[@]} packages already installed"
    return
  fi
  kiln_log "apt: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  _kiln_as_root apt-get update -qq
  _kiln_as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Creates .venv/ (or reuses it if its interpreter still runs).
kiln_ensure_venv() {
  if [[ -x "$KILN_PY" ]] && "$KILN_PY" -c 'import sys' 2>/dev/null; then
    kiln_log "venv: reusing $KILN_VENV ($("$KILN_PY" -V 2>&1))"
    return
  fi
  local base="${KILN_PYTHON:-python3}"
  command -v "$base" >/dev/null || kiln_die "$base not found (set KILN_PYTHON)"
  kiln_log "venv: creating $KILN_VENV with $base ($("$base" -V 2>&1))"
  rm -rf "$KILN_VENV"
  "$base" -m venv "$KILN_VENV"
}

# pip-installs scripts/requirements-dev.txt into the venv unless every pin is already satisfied.
kiln_ensure_python_deps() {
  local req="$KILN_ROOT/scripts/requirements-dev.txt"
  if "$KILN_PY" - "$req" <<'PY'
import importlib.metadata as md, re, sys
def key(v):  # numeric prefix of each dotted component, good enough for these pins
    return tuple(int(re.match(r"\d*", p).group() or 0) for p in v.split("."))
ok = True
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(?:(==|>=)\s*(\S+))?", line)
    name, op, want = m.groups()
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        ok = False
        continue
    if op == "==" and have != want or op == ">=" and key(have) < key(want):
        ok = False
sys.exit(0 if ok else 1)
PY
  then
    kiln_log "pip: requirements already satisfied"
    return
  fi
  kiln_log "pip: installing $(grep -v '^#' "$req" | xargs)"
  "$KILN_PY" -m pip install --disable-pip-version-check -q -r "$req"
}

# Builds the wheel incrementally (build/<wheel tag>/, see pyproject.toml) and installs it into
# the venv. --no-build-isolation reuses the venv's scikit-build-core and the system cmake/ninja,
# so nothing is downloaded and the CMake build tree persists between runs.
kiln_install_package() {
  kiln_log "pip: building and installing kiln-pjrt (incremental, build/py3-none-*)"
  local verbosity=-q
  [[ "${KILN_VERBOSE:-0}" != 0 ]] && verbosity=-v  # -v shows the CMake/compiler output
  CMAKE_BUILD_PARALLEL_LEVEL="$KILN_JOBS" \
    "$KILN_PY" -m pip install --disable-pip-version-check --no-build-isolation --no-deps \
      -C cmake.define.KILN_BLAS=scipy-openblas32 -C cmake.define.KILN_SCIPY_OPENBLAS_RUNPATH=ON \
      "$verbosity" "$KILN_ROOT"
  "$KILN_PY" -c 'import kiln, os; p = kiln.library_path(); assert os.path.isfile(p), p' \
    || kiln_die "kiln is installed but its library is missing"
}

# kiln_prune_build <build dir>: under KILN_PRUNE_BUILDS=1 (set by .ci/run, whose clone is used once)
# deletes a build tree whose job is done, so a CI run never holds every tree at once (the sanitizer
# trees with debug information are the largest; a CI machine once ran out of disk with all of them
# present). Interactive runs keep their trees, so ./test.sh stays incremental.
kiln_prune_build() {
  local dir="$1"
  [[ "${KILN_PRUNE_BUILDS:-0}" == 1 && -d "$dir" ]] || return 0
  kiln_log "disk: removing $dir ($(du -sh "$dir" | cut -f1)); KILN_PRUNE_BUILDS=1"
  rm -rf "$dir"
}

# kiln_log_disk <label>: one line with the space the build trees, ccache and the file system use.
kiln_log_disk() {
  # Never fails (callers run under set -e -o pipefail, and build/ may not exist yet).
  local trees="" cache="" free=""
  trees="$(du -sh "$KILN_ROOT/build" 2>/dev/null | cut -f1)" || true
  cache="$(ccache -s 2>/dev/null | sed -n 's/^ *Cache size (GB): *\([0-9.]*\).*/\1G/p' | head -1)" || true
  free="$(df -h --output=avail "$KILN_ROOT" 2>/dev/null | tail -1 | xargs)" || true
  kiln_log "disk ($1): build/ ${trees:-0}, ccache ${cache:-?}, free $free"
}

# The generator to use: Ninja when installed.
kiln_cmake_generator() {
  if command -v ninja >/dev/null; then echo Ninja; else echo "Unix Makefiles"; fi
}

# kiln_cmake_build <build dir> [cmake -D args...]: configure (cheap when already configured) and
# build with $KILN_JOBS jobs.
kiln_cmake_build() {
  local dir="$1"; shift
  local gen; gen="$(kiln_cmake_generator)"
  if [[ -f "$dir/CMakeCache.txt" ]] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=$gen\$" "$dir/CMakeCache.txt"; then
    rm -rf "$dir"  # generator changed (e.g. ninja got installed): start over
  fi
  mkdir -p "$dir"
  cmake -S "$KILN_ROOT" -B "$dir" -G "$gen" "$@" >"$dir/kiln-configure.log" 2>&1 \
    || { cat "$dir/kiln-configure.log"; kiln_die "cmake configure of $dir failed"; }
  grep -E '^-- Kiln|Warning' "$dir/kiln-configure.log" || true
  kiln_log "build: $dir"
  cmake --build "$dir" -j "$KILN_JOBS"
}

# kiln_sanitizer_build <build dir> [cmake -D args...]: kiln_cmake_build for the instrumented trees,
# linked with lld when it is installed (KILN_LINKER). Under KILN_PRUNE_BUILDS=1 their objects stay
# out of ccache: the trees are deleted after their run and nothing would reuse them.
kiln_sanitizer_build() {
  local linker=()
  command -v ld.lld >/dev/null && linker=(-DKILN_LINKER=lld)
  if [[ "${KILN_PRUNE_BUILDS:-0}" == 1 ]]; then CCACHE_DISABLE=1 kiln_cmake_build "$@" "${linker[@]}"
  else kiln_cmake_build "$@" "${linker[@]}"; fi
}

# kiln_build_asan: build/asan, clang with ASan + UBSan at -O1 -g1 with assertions on: the C++ tests
# and the libFuzzer harnesses in one tree (scripts/cpp_tests.sh runs the first, scripts/fuzz.sh the
# second), so the instrumented objects are compiled once.
kiln_build_asan() {
  command -v clang++ >/dev/null || kiln_die "clang++ not found (scripts/apt-packages.txt installs clang)"
  CXX=clang++ kiln_sanitizer_build build/asan -DKILN_BUILD_TESTS=ON -DKILN_BUILD_FUZZERS=ON \
    -DKILN_SANITIZE=ON -DKILN_EXCLUDE_REGEX= -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
}
