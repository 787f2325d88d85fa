"""`jax_num_cpu_devices` gives Kiln as many devices as the CPU backend (python/kiln/_device_count.py),
unless KILN_DEVICE_COUNT says otherwise; a sharded program over them equals the CPU backend's.
Each case runs in a fresh process: the device count is fixed when the clients are created."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.requires_kiln

PROGRAM = r"""
import sys
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.config.update("jax_num_cpu_devices", int(sys.argv[1]))
kiln, cpu = jax.devices("kiln"), jax.devices("cpu")
print("COUNTS", len(kiln), len(cpu))
x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
out = []
for devs in (kiln, cpu):
    n = 2 if len(devs) >= 2 else 1
    s = NamedSharding(Mesh(np.array(devs[:n]), ("i",)), P("i"))
    y = jax.jit(lambda a: jnp.sin(a) * 2.0 + a.sum(axis=0))(jax.device_put(x, s))
    out.append(np.asarray(y))
np.testing.assert_allclose(out[0], out[1], rtol=1e-6)
print("OK")
"""


def _counts(n: int, **env_extra) -> tuple[int, int]:
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu", **env_extra)
    if "KILN_DEVICE_COUNT" not in env_extra:
        env.pop("KILN_DEVICE_COUNT", None)
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(n)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]
    line = next(line for line in proc.stdout.splitlines() if line.startswith("COUNTS"))
    kiln, cpu = line.split()[1:]
    return int(kiln), int(cpu)


def test_kiln_follows_jax_num_cpu_devices():
    assert _counts(3) == (3, 3)


def test_kiln_device_count_wins():
    assert _counts(3, KILN_DEVICE_COUNT="2") == (2, 3)
