"""Several processes (jax.distributed): until Kiln exchanges values between processes, a Kiln client
that is one of several must refuse to start instead of computing as if it were alone (a psum over
"all" devices would then sum one process's devices only: a silent wrong answer)."""

import os
import socket
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.requires_kiln

WORKER = textwrap.dedent(
    """
    import sys
    import jax
    import jax.numpy as jnp

    port, pid = sys.argv[1], int(sys.argv[2])
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid,
                               initialization_timeout=60)
    try:
        n = jax.device_count()
        out = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(jnp.ones(jax.local_device_count()))
        print("RESULT", jax.process_count(), n, out.tolist())
    except Exception as e:
        print("ERROR", type(e).__name__, e)
    jax.distributed.shutdown()
    """
)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("platforms", ["kiln", ""])
def test_second_process_is_refused_not_silently_alone(platforms):
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_FLAGS")}
    env["JAX_PLATFORMS"] = platforms
    port = _free_port()
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(port), str(pid)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for pid in range(2)
    ]
    outputs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=180)
            outputs.append(out)
    finally:
        for p in procs:
            p.kill()
    for out in outputs:
        lines = [l for l in out.splitlines() if l.startswith(("RESULT", "ERROR"))]
        assert lines, out
        # Either the backend refuses (Kiln asked for, or chosen by default) ...
        if lines[-1].startswith("ERROR"):
            assert "Kiln runs in one process only" in lines[-1], lines[-1]
            assert "2 processes" in lines[-1]
        else:  # ... or whatever answered saw both processes and summed over both.
            _, count, devices, result = lines[-1].split(" ", 3)
            assert int(count) == 2 and int(devices) == 2 and result == "[2.0]", lines[-1]
