"""Executable serialization: jax.experimental.serialize_executable round trips on Kiln, and JAX's
persistent compilation cache stores Kiln executables so that a second process loads them instead
of compiling (counted with JAX's own cache-hit events)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln


def program(x):
    for _ in range(3):
        x = jnp.tanh(x @ x.T + 1.0)
    return x.sum(axis=0)


def test_serialize_and_load_round_trip():
    from jax.experimental.serialize_executable import deserialize_and_load, serialize

    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    k = get_kiln_device()
    compiled = jax.jit(program).lower(jax.device_put(x, k)).compile()
    payload, in_tree, out_tree = serialize(compiled)
    loaded = deserialize_and_load(payload, in_tree, out_tree, backend=k.client)
    got = np.asarray(loaded(jax.device_put(x, k)))
    want = np.asarray(jax.jit(program)(jax.device_put(x, get_cpu_device())))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


CACHE_SCRIPT = textwrap.dedent("""
    import sys, jax, jax.numpy as jnp, numpy as np
    from jax import monitoring
    hits = []
    monitoring.register_event_listener(
        lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    x = jax.device_put(np.arange(16, dtype=np.float32).reshape(4, 4) / 16, jax.devices("kiln")[0])
    f = jax.jit(lambda x: jnp.tanh(x @ x.T + 1.0).sum(axis=0))
    print("RESULT", np.asarray(f(x)).tolist())
    print("HITS", len(hits))
""")


def test_persistent_cache_serves_a_second_process(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu")
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", CACHE_SCRIPT, str(tmp_path)], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
        runs.append(lines)
    assert any(p.name.endswith("-cache") for p in tmp_path.iterdir()), list(tmp_path.iterdir())
    assert runs[0]["HITS"] == "0"
    assert int(runs[1]["HITS"]) >= 1
    assert runs[0]["RESULT"] == runs[1]["RESULT"]
