"""Sharded jit programs run per device by Kiln's SPMD partitioner (compiler/spmd_partitioner.h).

The cases (spmd_cases.py) run in a fresh process with KILN_DEVICE_COUNT=N (4 and 8) and N CPU
devices on a (2, N/2) mesh ('x', 'y'): dot_general with each sharding combination of JAX's
export_test.py (x_y, x_None, contracting2, fsdp, half_tp) and its gradients (also on a mesh listing the devices in reverse), an elementwise chain
with a resharded operand, reductions over split dims, a sharding constraint that moves the split, reshapes, slices and concatenations,
and a data-parallel MLP with its gradient. Each requires the CPU backend's values (rtol 1e-5,
atol 1e-6), `out.sharding.spec` and shard shapes, and that Kiln ran the per-device program (with
the all-gather or all-reduce the case needs in `compiled.as_text()`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import SELFCHECK

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [
    "dot_x_y",
    "dot_x_None",
    "dot_contracting2",
    "dot_fsdp",
    "dot_half_tp",
    "fsdp_on_a_reversed_mesh",
    "elementwise_chain",
    "reductions_over_split_dims",
    "reshard_by_constraint",
    "reshape_slice_concatenate",
    "data_parallel_mlp_and_grad",
]
DEVICE_COUNTS = [4, 8]

pytestmark = pytest.mark.requires_kiln


@pytest.fixture(scope="module")
def results():
    if SELFCHECK:
        pytest.skip("needs the real Kiln plugin")
    out = {}
    for n in DEVICE_COUNTS:
        env = dict(os.environ, KILN_DEVICE_COUNT=str(n), JAX_PLATFORMS="kiln,cpu",
                   XLA_FLAGS=(os.environ.get("XLA_FLAGS", "")
                              + f" --xla_force_host_platform_device_count={n}").strip())
        proc = subprocess.run([sys.executable, os.path.join(HERE, "spmd_cases.py")],
                              env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[n] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_every_case_is_listed(results):
    for n in DEVICE_COUNTS:
        assert sorted(results[n]) == sorted(CASES)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("devices", DEVICE_COUNTS)
def test_spmd(results, devices, name):
    result = results[devices][name]
    assert result["ok"], result["detail"]
