"""GSPMD-partitioned programs (`mhlo.sharding`, jax_use_shardy_partitioner=False) on 2, 4 and 8
Kiln devices.

The device count is fixed when the backends start, so the cases (gspmd_cases.py) run in a fresh
process per count with KILN_DEVICE_COUNT=N and N CPU devices for the reference; each case compares
Kiln's values (rtol 1e-5, atol 1e-6; integers exactly) and the placement of every device's piece
(`out.sharding`) with the CPU backend's.
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
CASES = ["elementwise_sharded_argument", "matmul_2d_mesh_with_result_shardings",
         "transposed_device_order", "explicit_device_list", "sharding_constraint_inside",
         "exported_with_gspmd_called_with_shardy", "shard_map_collectives_2d",
         "shard_map_under_grad", "shard_map_without_operands_and_replicated_result",
         "pmap_psum_and_axis_index", "partially_manual_shard_map"]

pytestmark = pytest.mark.requires_kiln


def run_cases(devices: int) -> dict:
    env = dict(os.environ, KILN_DEVICE_COUNT=str(devices), JAX_PLATFORMS="kiln,cpu",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "")
                          + f" --xla_force_host_platform_device_count={devices}").strip())
    proc = subprocess.run([sys.executable, os.path.join(HERE, "gspmd_cases.py")],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=[2, 4, 8])
def results(request):
    if SELFCHECK:
        pytest.skip("needs the real Kiln plugin")
    return run_cases(request.param)


@pytest.mark.parametrize("name", CASES)
def test_gspmd(results, name):
    result = results[name]
    assert result["ok"], result["detail"]


def test_cases_listed():
    # Every case the script defines runs here (a new case cannot be forgotten).
    with open(os.path.join(HERE, "gspmd_cases.py")) as f:
        tree = ast.parse(f.read())
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
               and any(isinstance(d, ast.Name) and d.id == "case" for d in n.decorator_list)]
    assert sorted(defined) == sorted(CASES)
