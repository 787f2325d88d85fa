"""Multi-device programs (pmap, shard_map, jax.sharding) on several Kiln devices.

The device count is fixed when the backends start, so the cases (multidevice_cases.py) run in a
fresh process with KILN_DEVICE_COUNT=4 and four CPU devices for the reference; each case compares
Kiln with the CPU backend (rtol 1e-5, atol 1e-6; integers exactly) and, where the issue states it,
with plain numpy or the single-device CPU result.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from conftest import SELFCHECK

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ["pmap_psum", "pmap_collectives_and_axis_index", "pmap_narrow_float_collectives",
         "pmap_psum_inside_scan_and_while",
         "pmap_value_and_grad", "shard_map_collectives", "shard_map_2d_partial_specs",
         "shard_map_partially_manual", "unreduced_result_summed_inside_jit",
         "unreduced_boundary_per_device", "nested_shard_map",
         "named_sharding_matmul_2x2", "data_parallel_mlp_step",
         "sharded_jit_propagation"]

pytestmark = pytest.mark.requires_kiln


def run_cases(devices: int, names: list[str]) -> dict:
    env = dict(os.environ, KILN_DEVICE_COUNT=str(devices), JAX_PLATFORMS="kiln,cpu",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "")
                          + f" --xla_force_host_platform_device_count={devices}").strip())
    proc = subprocess.run([sys.executable, os.path.join(HERE, "multidevice_cases.py"), *names],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def four_devices():
    if SELFCHECK:
        pytest.skip("needs the real Kiln plugin")
    return run_cases(4, CASES)


@pytest.mark.parametrize("name", CASES)
def test_four_devices(four_devices, name):
    result = four_devices[name]
    assert result["ok"], result["detail"]


def test_pmap_psum_on_one_device():
    result = run_cases(1, ["pmap_psum"])["pmap_psum"]
    assert result["ok"], result["detail"]


def test_cases_listed():
    # Every case the script defines runs here (a new case cannot be forgotten).
    with open(os.path.join(HERE, "multidevice_cases.py")) as f:
        tree = ast.parse(f.read())
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
               and any(isinstance(d, ast.Name) and d.id == "case" for d in n.decorator_list)]
    assert sorted(defined) == sorted(CASES)
