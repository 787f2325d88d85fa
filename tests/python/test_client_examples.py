"""docs/clients.md's runnable examples for clients other than JAX: a hand-written StableHLO text
program and an HloModuleProto, each compiled and run on Kiln through pypjrt (the examples check
their own results: 2x + y exactly, softmax against JAX's within 1e-6)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from pjrt_client import kiln_library

pytestmark = pytest.mark.requires_kiln


@pytest.mark.parametrize("example,expected", [
    ("pypjrt_stablehlo_text.py", "[1.5 3.5 5.5 7.5]"),
    ("pypjrt_hlo.py", "[0.0320586  0.08714432 0.23688284 0.6439143 ]"),
])
def test_client_example_runs(example, expected):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}  # JAX only writes the HLO proto here
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "examples", example),
                           kiln_library()], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == expected, proc.stdout
