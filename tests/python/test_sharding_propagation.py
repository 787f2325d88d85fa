"""Result shardings a partitioned program leaves open, as XLA's propagation gives them.

The cases (sharding_propagation_cases.py) run in a fresh process with KILN_DEVICE_COUNT=4 and four
CPU devices: each jits a function over a 2x2 mesh of each backend and requires Kiln's result to
have XLA:CPU's values, `out.sharding.spec` and per-device shards (exactly), one case per
propagation rule of compiler/sharding_propagation.h; and einsums with an unreduced out_sharding
(also through an exported function), whose every device must hold XLA's partial sum of its block
of the contraction (lower::PartialContraction), the totals equal to numpy's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import SELFCHECK

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ["elementwise_and_convert", "transpose_permutes_axes", "broadcast_in_dim_maps_dims",
         "reshape_split", "reshape_merge", "reduce_drops_reduced_dims",
         "slice_and_pad_of_unsharded_dims", "concatenate_keeps_other_dims",
         "dot_general_free_dims", "dot_general_batch_dims", "select_and_clamp",
         "while_loop_keeps_sharding", "cond_branches_agree", "uneven_split_is_replicated",
         "sharding_constraint_then_transpose", "unreduced_dot_partial_sums",
         "unreduced_dot_partial_sums_split_rows", "unreduced_dot_partial_sums_exported"]

pytestmark = pytest.mark.requires_kiln


@pytest.fixture(scope="module")
def results():
    if SELFCHECK:
        pytest.skip("needs the real Kiln plugin")
    env = dict(os.environ, KILN_DEVICE_COUNT="4", JAX_PLATFORMS="kiln,cpu",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "")
                          + " --xla_force_host_platform_device_count=4").strip())
    proc = subprocess.run([sys.executable, os.path.join(HERE, "sharding_propagation_cases.py")],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_case_is_listed(results):
    assert sorted(results) == sorted(CASES)


@pytest.mark.parametrize("name", CASES)
def test_sharding_propagation(results, name):
    assert results[name]["ok"], results[name]["detail"]
