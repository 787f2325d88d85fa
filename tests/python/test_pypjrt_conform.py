"""A second, independent PJRT client against Kiln: pypjrt's conformance probe, held to a committed
expectation.

`python -m pypjrt.conform LIB.so` (PyPI `pypjrt`, a pure-Python ctypes PJRT client) runs 63 checks
over the whole C API: plugin attributes, extensions, client, devices, compile from StableHLO text,
executables, topology, layouts, buffers, execute. A capability a plugin lacks is UNSUPPORTED, a
check whose prerequisite failed is SKIP, a wrong behaviour is FAIL.

`tools/conformance/pypjrt_expected.json` lists the checks that must pass: every check XLA's own CPU
plugin passes (recorded from `pjrt_c_api_cpu_plugin.so` of the PyPI wheel lammps-jax-pjrt-cpu
0.11.2, the PJRT C API build of XLA:CPU) plus those Kiln passes beyond it. The test fails on any
FAIL, and when an expected check does not pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from pjrt_client import kiln_library

pytestmark = pytest.mark.requires_kiln


def test_pypjrt_conformance_meets_the_expectation(tmp_path):
    expected_file = os.path.join(REPO_ROOT, "tools", "conformance", "pypjrt_expected.json")
    with open(expected_file) as f:
        expected = json.load(f)
    report = tmp_path / "conform.json"
    proc = subprocess.run([sys.executable, "-m", "pypjrt.conform", kiln_library(), "--json",
                           str(report)], capture_output=True, text=True, timeout=900)
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = {c["id"]: c for c in json.loads(report.read_text())["checks"]}
    failed = {i: c["detail"] for i, c in checks.items() if c["result"] == "fail"}
    assert not failed, f"pypjrt.conform FAIL: {failed}\n{proc.stdout[-3000:]}"
    missing = {i: (checks[i]["result"], checks[i]["detail"]) if i in checks else ("absent", "")
               for i in expected["must_pass"] if checks.get(i, {}).get("result") != "pass"}
    assert not missing, f"expected to pass but did not: {missing}\n{proc.stdout[-3000:]}"
    passed = sum(c["result"] == "pass" for c in checks.values())
    assert passed >= expected["min_pass"], f"{passed} checks passed, expected >= {expected['min_pass']}"
