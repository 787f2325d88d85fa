"""Timing, memory and machine-peak measurement for bench/run.

Method: both backends live in one process (JAX_PLATFORMS=kiln,cpu). For each program the inputs
are put on each backend's device first, one warm-up call compiles and runs it, and the results of
the two backends are compared (a program whose results differ is reported as a mismatch, never
silently timed). Then repetitions alternate between the backends; a repetition calls the function
back to back, blocking on each result, until at least `min_rep_s` has passed, and yields the time
per call. The statistic is the median over repetitions; throughputs set against the machine's
peaks (GFLOP/s, GB/s) use each backend's best repetition, as the peaks themselves are bests.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def tree_close(a, b, exact: bool | float) -> bool:
    import jax
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if exact is True:
            if not np.array_equal(x, y):
                return False
            continue
        # exact False: rtol = atol = 1e-3; a number: that tolerance (e.g. bf16 programs).
        tol = 1e-3 if exact is False else float(exact)
        wide = np.complex128 if np.iscomplexobj(x) else np.float64
        rtol = 0.0 if x.dtype.kind in "iub" else tol  # integers: within tol, absolutely
        if not np.allclose(x.astype(wide), y.astype(wide), rtol=rtol, atol=tol, equal_nan=True):
            return False
    return True


def time_calls(f, args, min_rep_s: float) -> float:
    import jax
    n, t0 = 0, time.perf_counter()
    while True:
        jax.block_until_ready(f(*args))
        n += 1
        t = time.perf_counter() - t0
        if t >= min_rep_s:
            return t / n


def run_time(fns: dict, args: dict, reps: int, min_rep_s: float, best: dict | None = None) -> dict:
    """Median time per call per backend; `best`, when given, receives each one's fastest."""
    samples = {k: [] for k in fns}
    for _ in range(reps):
        for k in fns:  # alternate backends within each repetition
            samples[k].append(time_calls(fns[k], args[k], min_rep_s))
    if best is not None:
        best.update({k: min(v) for k, v in samples.items()})
    return {k: statistics.median(v) for k, v in samples.items()}


def compile_time(make, devices: dict, reps: int) -> dict:
    """Per backend, medians of a cold `jax.jit(f).lower(*args).compile()` (caches cleared before
    each), timed in its two stages: {"lower": s, "compile": s}. The lowering (tracing and
    StableHLO emission) is JAX's work and the same for every backend; the compile is the
    backend's (for a plugin it includes jaxlib serializing the module it hands over)."""
    import jax
    fn, host_args = make()
    out = {k: {"lower": [], "compile": []} for k in devices}
    for _ in range(reps):
        for k, dev in devices.items():
            args = jax.device_put(host_args, dev)
            jax.clear_caches()
            t0 = time.perf_counter()
            lowered = jax.jit(fn).lower(*args)
            t1 = time.perf_counter()
            lowered.compile()
            t2 = time.perf_counter()
            out[k]["lower"].append(t1 - t0)
            out[k]["compile"].append(t2 - t1)
    return {k: {stage: statistics.median(v) for stage, v in d.items()} for k, d in out.items()}


def dispatch_time(devices: dict, calls: int, reps: int) -> dict:
    """µs-scale cost of one call of a trivial jitted function: `calls` launches without blocking,
    then one block on the last result."""
    import jax
    out = {k: [] for k in devices}
    f = jax.jit(lambda x: x + 1)
    xs = {k: jax.device_put(np.float32(1.0), d) for k, d in devices.items()}
    for k in devices:
        f(xs[k]).block_until_ready()
    for _ in range(reps):
        for k in devices:
            x = xs[k]
            t0 = time.perf_counter()
            y = None
            for _ in range(calls):
                y = f(x)
            y.block_until_ready()
            out[k].append((time.perf_counter() - t0) / calls)
    return {k: statistics.median(v) for k, v in out.items()}


MEMORY_CHILD = r"""
import json, os, sys
sys.path.insert(0, {here!r})
import numpy as np, jax
from programs import PROGRAMS, X64
jax.config.update("jax_enable_x64", {name!r} in X64)
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
make, _ = PROGRAMS[{name!r}]
fn, host = make()
dev = jax.devices({platform!r})[0]
args = jax.device_put(host, dev)
jax.block_until_ready(args)
f = jax.jit(fn)
base = rss("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")  # reset the peak (VmHWM) to the current RSS
for _ in range(3):
    jax.block_until_ready(f(*args))
print(json.dumps({{"peak": rss("VmHWM:") - base}}))
"""


def peak_memory(name: str, platform: str, timeout: float = 300) -> float | None:
    """Peak resident memory (bytes) that compiling and running `name` three times adds, measured in
    a fresh process that loads only `platform`."""
    env = dict(os.environ, JAX_PLATFORMS=platform)
    code = MEMORY_CHILD.format(here=str(HERE), name=name, platform=platform)
    try:
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return float(json.loads(line)["peak"])
    return None


def machine_peaks(cache: Path) -> dict:
    """Builds bench/probe/peaks.cc for this machine (-march=native) and runs it."""
    cache.mkdir(parents=True, exist_ok=True)
    exe = cache / "peaks"
    src = HERE / "probe" / "peaks.cc"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["g++", "-O2", "-march=native", "-pthread", str(src), "-o", str(exe)],
                       check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    vals = dict(line.split() for line in out.splitlines() if line.strip())
    return {"fma_peak_gflops_f32": float(vals["fma_gflops"]),
            "mem_bandwidth_gbs": float(vals["triad_gbs"]), "threads": int(vals["threads"])}


def cpu_info() -> dict:
    model, flags = "unknown", set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return {"cpu": model, "cores": len(os.sched_getaffinity(0)),
            "simd": [f for f in ("avx512f", "avx512_bf16", "avx2", "fma") if f in flags]}


def collect():
    gc.collect()
