#!/usr/bin/env bash
# Quick start, part 2: installs what is needed (Debian packages, .venv/, Kiln), builds and runs the
# C++ tests under ASan+UBSan (build/asan, clang), runs the libFuzzer harnesses built in the same tree
# for a fixed time, then the C++ tests under ThreadSanitizer (build/tsan) and normally (build/dev),
# builds the manylinux wheel and smoke-tests it in a fresh virtualenv and with the oldest supported
# jaxlib (scripts/wheel_smoke.sh), then the op tests with programs also compiled from MLIR text,
# from HLO and from the text Kiln's own writer prints, and from the HLO its HLO writer makes
# (KILN_PROGRAM_FORMAT=text, hlo, written, hlo_written) and the Python tests (JAX on Kiln vs JAX's
# CPU backend). Exits non-zero on any failure; ends with pytest's summary. With
# KILN_PRUNE_BUILDS=1 (as .ci/run sets) each build tree but build/dev and the installed package's is
# deleted once its job is done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=scripts/common.sh
source scripts/common.sh
kiln_log_disk "start"
scripts/setup.sh
scripts/check_format.sh
scripts/cpp_tests.sh asan
scripts/fuzz.sh "${KILN_FUZZ_SECONDS:-60}"  # the harnesses are in build/asan too
scripts/cpp_tests.sh tsan dev
scripts/wheel_smoke.sh
# The op tests once more with every Kiln program also compiled in the other program formats
# (tests/python/program_formats.py) and compared bit for bit: from MLIR text; printed back as MLIR
# text by Kiln's own writer (ir/mlir_text.h, through build/dev/ir_dump), parsed by jaxlib's MLIR
# parser and compiled from that text; written as an HloModuleProto by Kiln's HLO writer
# (ingest/hlo_writer.h, through build/dev/ir_dump --hlo), read by jaxlib's XlaComputation and
# compiled as format "hlo"; and from HLO (an HloModuleProto per program, what TensorFlow and
# PyTorch/XLA send), but for erf on f64, which Kiln's HLO reader refuses by name (JAX's StableHLO
# path expands it). One pass for all four: each program is traced and run once.
op_tests=(tests/python/test_ops.py tests/python/test_convolution.py tests/python/test_fft.py
          tests/python/test_random.py tests/python/test_narrow_float.py tests/python/test_loops.py)
kiln_log "pytest: op tests with KILN_PROGRAM_FORMAT=text,written,hlo_written,hlo"
KILN_PROGRAM_FORMAT=text,written,hlo_written,hlo .venv/bin/python -m pytest -q -n "$KILN_JOBS" \
  "${op_tests[@]}" -k "not erf-float64"
KILN_PROGRAM_FORMAT=text,written,hlo_written .venv/bin/python -m pytest -q -n "$KILN_JOBS" \
  "${op_tests[@]}" -k "erf-float64"
kiln_log "pytest: tests/python"
exec .venv/bin/python -m pytest tests/python -q -n "$KILN_JOBS" "$@"
