"""JAX's primitive harnesses on Kiln against the CPU backend, held to the committed baseline.

`tools/conformance/harnesses.py` runs every harness of `jax._src.internal_test_util.test_harnesses`
(about 5,600: one use of one lax primitive each, over its dtypes and shapes) on both backends and
compares the results with per-dtype tolerances. This test fails when a harness that the baseline
(`tools/conformance/harnesses_baseline.json`) records as passing no longer passes, when fewer than
99% of the harnesses that run on CPU pass on Kiln, or when a harness crashes or hangs. The report
lands in build/harnesses.md. After a change that makes more harnesses pass, refresh the baseline:
`tools/conformance/harnesses.py --write-baseline tools/conformance/harnesses_baseline.json`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.requires_kiln


def test_harnesses_hold_the_baseline():
    tool = os.path.join(REPO_ROOT, "tools", "conformance", "harnesses.py")
    baseline = os.path.join(REPO_ROOT, "tools", "conformance", "harnesses_baseline.json")
    report = os.path.join(REPO_ROOT, "build", "harnesses.md")
    os.makedirs(os.path.dirname(report), exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PJRT_NAMES_AND_LIBRARY_PATHS"}
    proc = subprocess.run([sys.executable, tool, "--baseline", baseline, "--min-rate", "99",
                           "--jobs", "2", "--markdown", report],
                          capture_output=True, text=True, timeout=3600, env=env)
    lines = proc.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("harnesses: "), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, "\n".join(lines[-60:]) + proc.stderr[-2000:]
