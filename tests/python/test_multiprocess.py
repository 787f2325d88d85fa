"""Several processes (jax.distributed) on loopback, each with its Kiln devices: the topology every
process sees, programs over every process's devices compared with the same program on one process
with as many devices (or with the known answer), and the faults: a peer that dies mid-run, and
processes that run different programs. Every run is under a timeout: a hang fails the test."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.requires_kiln

REPO = pathlib.Path(__file__).resolve().parents[2]

PRELUDE = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    port, pid, nproc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=nproc, process_id=pid,
                               initialization_timeout=60)

    def emit(**kw):
        print("RESULT " + json.dumps(kw), flush=True)
    """
)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_processes(body, nproc=2, devices=2, timeout=240, env_extra=None):
    """Runs PRELUDE + body in `nproc` processes with `devices` Kiln devices each; returns, per
    process, (exit code, the RESULT dicts it printed, its whole output)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_FLAGS")}
    env.update(JAX_PLATFORMS="kiln", KILN_DEVICE_COUNT=str(devices))
    env.update(env_extra or {})
    port = _free_port()
    code = PRELUDE + textwrap.dedent(body)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(port), str(i), str(nproc)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(nproc)]
    deadline = time.monotonic() + timeout
    out = []
    try:
        for p in procs:
            text, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results = [json.loads(l[7:]) for l in text.splitlines() if l.startswith("RESULT ")]
            out.append((p.returncode, results, text))
    finally:
        for p in procs:
            p.kill()
    return out


def test_every_process_sees_the_global_topology():
    runs = run_processes("""
        emit(count=jax.process_count(), index=jax.process_index(),
             devices=[(d.id, d.process_index) for d in jax.devices()],
             local=[d.id for d in jax.local_devices()])
        jax.distributed.shutdown()
    """)
    for pid, (rc, results, text) in enumerate(runs):
        assert rc == 0 and results, text
        r = results[0]
        assert r["count"] == 2 and r["index"] == pid
        assert r["devices"] == [[0, 0], [1, 0], [2, 1], [3, 1]]
        assert r["local"] == [2 * pid, 2 * pid + 1]


def test_pmap_over_two_processes_gives_the_one_process_answer():
    # The README's pmap example over 4 devices, 2 in each process: x + psum(x) of arange(4).
    runs = run_processes("""
        local = jnp.arange(2, dtype=jnp.float32) + 2 * pid
        out = jax.pmap(lambda x: x + jax.lax.psum(x, "i"), axis_name="i")(local)
        whole = multihost_utils.process_allgather(out, tiled=True)
        emit(local=np.asarray(out).tolist(), whole=np.asarray(whole).tolist())
        jax.distributed.shutdown()
    """)
    for pid, (rc, results, text) in enumerate(runs):
        assert rc == 0 and results, text
        assert results[0]["whole"] == [6.0, 7.0, 8.0, 9.0], text
        assert results[0]["local"] == [6.0 + 2 * pid, 7.0 + 2 * pid], text


MLP = """
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 8)).astype(np.float32)
    ys = (xs @ rng.standard_normal((8, 1)) + 0.1).astype(np.float32)
    params = {"w1": jnp.asarray(rng.standard_normal((8, 16)).astype(np.float32) * 0.3),
              "b1": jnp.zeros(16), "w2": jnp.asarray(rng.standard_normal((16, 1)).astype(np.float32) * 0.3),
              "b2": jnp.zeros(1)}
    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)
    @jax.jit
    def step(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree.map(lambda a, b: a - 0.05 * b, p, g), l
    batch = NamedSharding(mesh, P("data"))
    n = len(jax.local_devices()) * 64 // len(jax.devices())
    start = jax.process_index() * n
    x = jax.make_array_from_process_local_data(batch, xs[start:start + n], xs.shape)
    y = jax.make_array_from_process_local_data(batch, ys[start:start + n], ys.shape)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    losses = []
    for _ in range(20):
        params, l = step(params, x, y)
        losses.append(float(l))
    # Replicated: every device holds the whole value.
    w = {k: np.asarray(v.addressable_shards[0].data).tolist() for k, v in params.items()}
    # The step runs per device (compiler/spmd_partitioner.h): each process computes its own
    # devices' shards only, the gradients summed by an all-reduce across the processes.
    text = step.lower(params, x, y).compile().as_text() or ""
    emit(losses=losses, params=w,
         per_device="SPMDFullToShardShape" in text and "all-reduce" in text)
    jax.distributed.shutdown()
"""


def test_data_parallel_training_equals_one_process():
    two = run_processes(MLP, nproc=2, devices=2)
    one = run_processes(MLP, nproc=1, devices=4)
    rc, results, text = one[0]
    assert rc == 0 and results, text
    want = results[0]
    for rc, results, text in two:
        assert rc == 0 and results, text
        got = results[0]
        import numpy as np
        np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5)
        for k in want["params"]:
            np.testing.assert_allclose(got["params"][k], want["params"][k], rtol=1e-5, atol=1e-6)
        assert got["losses"][-1] < got["losses"][0]
        assert got["per_device"] and want["per_device"]


def test_a_dead_peer_is_an_error_not_a_hang():
    # Process 0 waits in an all_reduce when process 1 dies; it must fail within
    # KILN_COLLECTIVE_TIMEOUT, naming the collective.
    runs = run_processes("""
        import time
        f = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")
        f(jnp.ones(2)).block_until_ready()  # both alive: fine
        if pid == 1:
            time.sleep(2)  # process 0 is inside the next psum by now
            os._exit(1)
        t = time.monotonic()
        try:
            f(jnp.ones(2)).block_until_ready()
            emit(error=None)
        except Exception as e:
            emit(error=str(e), seconds=time.monotonic() - t)
        os._exit(0)
    """, env_extra={"KILN_COLLECTIVE_TIMEOUT": "10"}, timeout=180)
    rc, results, text = runs[0]
    assert results and results[0]["error"], text
    assert results[0]["seconds"] < 60, results[0]
    assert "process 1" in results[0]["error"], results[0]["error"]
    assert "all_reduce" in results[0]["error"], results[0]["error"]


def test_processes_running_different_programs_is_an_error():
    runs = run_processes("""
        try:
            arg = jnp.ones((2, 3))
            # Both meet in a psum, of different programs: an error, not a mix of their data.
            r = jax.pmap(lambda x: jax.lax.psum(x * 2, "i"), axis_name="i")(arg) if pid == 0 \\
                else jax.pmap(lambda x: jax.lax.psum(jnp.sin(x), "i"), axis_name="i")(arg)
            r.block_until_ready()
            emit(error=None)
        except Exception as e:
            emit(error=str(e))
        os._exit(0)
    """, env_extra={"KILN_COLLECTIVE_TIMEOUT": "20"}, timeout=180)
    for rc, results, text in runs:
        assert results and results[0]["error"], text
        assert "different program" in results[0]["error"], results[0]["error"]


@pytest.mark.skipif(not os.environ.get("KILN_JAX_SRC"),
                    reason="JAX's tests/multiprocess files need a jax-ml/jax checkout at the "
                           "installed tag: set KILN_JAX_SRC (docs/distributed.md)")
@pytest.mark.parametrize("devices", [1, 2])
def test_jax_multiprocess_files_pass_where_the_cpu_backend_does(devices):
    baseline = REPO / "tools" / "conformance" / f"multiprocess_baseline_2x{devices}.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools/conformance/multiprocess.py"), "--jax-src",
         os.environ["KILN_JAX_SRC"], "--devices", str(devices), "--baseline", str(baseline)],
        capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
