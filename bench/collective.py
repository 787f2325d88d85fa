#!/usr/bin/env python3
"""Collectives across processes: Kiln against JAX's CPU backend with Gloo, launched the same way.

`bench/run --kinds collective` runs this (or run it directly). For each backend it starts
--processes processes on loopback (jax.distributed, one device each unless --devices), and in them
times, after warm-up, the median of --reps calls of (the best of --rounds launches, alternating
the backends):
  * all_reduce_<size>: a psum over every device of a shard_map'd f32 array of <size> per device
    (4 KiB, 1 MiB, 64 MiB); GB/s = bytes per device / time (the algorithm bandwidth);
  * data_parallel_step: one SGD step of an MLP (256-512-512-10, batch 512 per device) whose
    batch is split over every device, gradients averaged across them.
Prints one line per program and writes JSON to --out (results as in bench/run: kiln_s, xla_s,
ratio = kiln / xla).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent

WORKER = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    port, pid, nproc, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=nproc, process_id=pid)
    mesh = Mesh(np.array(jax.devices()), ("x",))
    nd, nl = len(jax.devices()), len(jax.local_devices())

    def timed(f, *args):
        for _ in range(3):
            jax.block_until_ready(f(*args))
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            jax.block_until_ready(f(*args))
            ts.append(time.perf_counter() - t)
        return float(np.median(ts))

    out = {}
    for label, nbytes in (("4KiB", 4 << 10), ("1MiB", 1 << 20), ("64MiB", 64 << 20)):
        n = nbytes // 4
        sharding = NamedSharding(mesh, P("x"))
        local = np.full((nl * n,), pid + 1.0, np.float32)
        x = jax.make_array_from_process_local_data(sharding, local, (nd * n,))
        f = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=mesh, in_specs=P("x"),
                                  out_specs=P("x")))
        r = f(x)
        want = sum(range(1, nproc + 1)) * nl
        assert float(np.asarray(r.addressable_shards[0].data)[0]) == want, "wrong sum"
        out["all_reduce_" + label] = (timed(f, x), nbytes)

    rng = np.random.default_rng(0)
    sizes = [256, 512, 512, 10]
    params = [(jnp.asarray(rng.standard_normal((a, b)).astype(np.float32) * 0.05),
               jnp.zeros(b, jnp.float32)) for a, b in zip(sizes[:-1], sizes[1:])]
    params = jax.device_put(params, NamedSharding(mesh, P()))
    def loss(ps, x, y):
        for w, b in ps[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = ps[-1]
        return jnp.mean(jax.nn.logsumexp(x @ w + b, -1) - jnp.sum((x @ w + b) * y, -1))
    @jax.jit
    def step(ps, x, y):
        g = jax.grad(loss)(ps, x, y)
        return jax.tree.map(lambda p, d: p - 0.01 * d, ps, g)
    batch = NamedSharding(mesh, P("x"))
    bl = 512 * nl
    x = jax.make_array_from_process_local_data(
        batch, rng.standard_normal((bl, 256)).astype(np.float32), (512 * nd, 256))
    y = jax.make_array_from_process_local_data(
        batch, np.eye(10, dtype=np.float32)[rng.integers(0, 10, bl)], (512 * nd, 10))
    out["data_parallel_step"] = (timed(step, params, x, y), None)
    if pid == 0:
        print("RESULT " + json.dumps(out), flush=True)
    jax.distributed.shutdown()
    """
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(backend: str, processes: int, devices: int, reps: int, timeout: float) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    code = WORKER
    if backend == "kiln":
        env.update(JAX_PLATFORMS="kiln", KILN_DEVICE_COUNT=str(devices))
    else:
        env["JAX_PLATFORMS"] = "cpu"
        code = ("import jax\njax.config.update('jax_cpu_collectives_implementation', 'gloo')\n"
                f"jax.config.update('jax_num_cpu_devices', {devices})\n" + WORKER)
    port = free_port()
    procs = [subprocess.Popen([sys.executable, "-c", code, str(port), str(i), str(processes),
                               str(reps)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(processes)]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            p.kill()
    for text in outs:
        for line in text.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[7:])
    raise RuntimeError(f"{backend}: no result\n" + outs[0][-3000:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--devices", type=int, default=1, help="devices per process")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args()
    # Rounds alternate the backends; each program keeps its best round's median (2 processes on
    # 2 cores: a round where the scheduler parks a process's threads is noise, not the backend).
    got = {"kiln": {}, "cpu": {}}
    for _ in range(args.rounds):
        for b in ("kiln", "cpu"):
            for name, (t, nbytes) in launch(b, args.processes, args.devices, args.reps,
                                            args.timeout).items():
                if name not in got[b] or t < got[b][name][0]:
                    got[b][name] = (t, nbytes)
    results = []
    for name, (kiln_s, nbytes) in got["kiln"].items():
        xla_s = got["cpu"][name][0]
        r = {"name": name, "kind": "collective", "kiln_s": kiln_s, "xla_s": xla_s,
             "ratio": kiln_s / xla_s, "unit": "s"}
        gbs = ""
        if nbytes:
            r["kiln_gbs"], r["xla_gbs"] = nbytes / kiln_s / 1e9, nbytes / xla_s / 1e9
            gbs = f"  {r['kiln_gbs']:.2f} vs {r['xla_gbs']:.2f} GB/s"
        results.append(r)
        print(f"  collective {name:24s} kiln {kiln_s * 1e3:9.3f} ms  cpu+gloo {xla_s * 1e3:9.3f} ms"
              f"  ratio {r['ratio']:.2f}{gbs}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"processes": args.processes, "devices": args.devices,
                                        "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
