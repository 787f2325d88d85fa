"""Helpers for the tests of Kiln's generated code (test_loop_native.py, test_fused_native.py) and
of what the compiler made of a program (test_fusion.py): results of the same script with a code
generator switched off, compared byte for byte, the names of the steps a traced run ran, and the
CPU's feature flags (for tests of paths only some CPUs take)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np


def canonical_bytes(x: np.ndarray) -> bytes:
    """The bytes of x, with every NaN as one canonical NaN: which of two NaN operands an IEEE
    operation returns depends on the operand order a compiler picked for a commutative op (x86
    returns the first), and no semantics fix it."""
    x = np.array(x)
    if x.dtype.kind == "f":
        x[np.isnan(x)] = np.nan
    return x.tobytes()


def results_with(script: str, switch: str, tmp_path: Path) -> dict[str, np.ndarray]:
    """Runs `script <out.npz>` in a subprocess with environment variable `switch`=0 and returns
    the arrays it saved."""
    out = tmp_path / "interpreted.npz"
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu", **{switch: "0"})
    proc = subprocess.run([sys.executable, script, str(out)], env=env, capture_output=True,
                          text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as saved:
        return {k: saved[k] for k in saved.files}


def differing(native: dict[str, np.ndarray], interpreted: dict[str, np.ndarray]) -> list[str]:
    """Names whose arrays differ in type or in bytes (NaNs canonical); both must have the same
    names."""
    assert set(native) == set(interpreted)
    return [k for k in native if native[k].dtype != interpreted[k].dtype
            or canonical_bytes(native[k]) != canonical_bytes(interpreted[k])]


def traced_step_names(code: str, tmp_path: Path) -> list[str]:
    """The steps Kiln ran for Python `code` (KILN_TRACE), in order (not its compiles)."""
    trace = tmp_path / "trace.json"
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu", KILN_TRACE=str(trace))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [e["name"] for e in json.loads(trace.read_text())["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") != "compile"]


def cpu_flags() -> frozenset[str]:
    """The feature flags /proc/cpuinfo lists for the first CPU (empty where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()
