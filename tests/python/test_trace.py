"""Execution traces (KILN_TRACE), thread use under a CPU affinity mask, and cost analysis.

Each check runs a small program in a fresh process (the trace file and the thread pool are set up
when the process starts) and inspects what it left behind: the Chrome trace-event JSON that
Perfetto opens, tools/trace_summary's table and SVG chart, tools/plot_trace's PNG, and the names of Kiln's worker threads
in /proc.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import REPO_ROOT

pytestmark = pytest.mark.requires_kiln

PROGRAM = r"""
import os, sys
import numpy as np
import jax, jax.numpy as jnp
dev = jax.devices("kiln")[0]
x = jax.device_put(np.random.default_rng(0).normal(size=(256, 256)).astype(np.float32), dev)
def f(x):
    y = jnp.tanh(x @ x) * 2.0 + 1.0
    return jax.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + jnp.sin(c), y).sum()
print(float(jax.jit(f)(x)))
big = jax.device_put(np.ones((2048, 2048), np.float32), dev)
jax.block_until_ready(jax.jit(lambda a: (a @ a).sum())(big))
names = []
for t in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{t}/comm") as fh:
        names.append(fh.read().strip())
print("WORKERS", names.count("kiln-worker"))
"""


def run(tmp_path, env_extra, prefix=()):
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu", **env_extra)
    env.pop("KILN_NUM_THREADS", None)
    proc = subprocess.run([*prefix, sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_trace_is_chrome_json_with_families(tmp_path):
    trace = tmp_path / "trace.json"
    run(tmp_path, {"KILN_TRACE": str(trace)})
    data = json.loads(trace.read_text())
    events = data["traceEvents"]
    assert data["otherData"]["dropped_events"] == 0
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0 for e in events)
    families = {e["cat"] for e in events}
    assert {"linalg", "control_flow"} <= families, families
    dots = [e for e in events if e["name"].startswith("stablehlo.dot_general (f32) at ")]
    assert dots and "<string>" in dots[0]["name"]  # the source line of the op
    # Kiln's own compile time: one event per jitted function, each before its program's steps,
    # and its phases inside it (run on the compiling thread, which may not be the caller's).
    compiles = [e for e in events if e["name"] == "PJRT_Client_Compile"]
    assert len(compiles) == 2 and all(e["cat"] == "compile" for e in compiles)
    assert compiles[0]["ts"] + compiles[0]["dur"] <= dots[0]["ts"] < compiles[1]["ts"]
    phases = [e for e in events if e["cat"] == "compile" and e["name"] != "PJRT_Client_Compile"]
    names = {e["name"] for e in phases}
    assert {"compile: read program", "compile: verify", "compile: build program"} <= names, names
    for e in phases:
        assert any(c["ts"] <= e["ts"]
                   and e["ts"] + e["dur"] <= c["ts"] + c["dur"] + 1e-3 for c in compiles), e
    # The loop's body steps lie inside the while step on the same thread.
    loop = next(e for e in events if e["name"].startswith("stablehlo.while"))
    inner = [e for e in events if e["tid"] == loop["tid"] and e is not loop
             and loop["ts"] <= e["ts"] and e["ts"] + e["dur"] <= loop["ts"] + loop["dur"] + 1e-3]
    assert len(inner) >= 3

    svg = tmp_path / "families.svg"
    summary = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tools", "trace_summary"),
                              str(trace), "--svg", str(svg)], capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    assert "linalg" in summary.stdout and "stablehlo.dot_general (f32)" in summary.stdout
    assert svg.read_text().startswith("<svg") and "linalg" in svg.read_text()

    png = tmp_path / "families.png"
    plot = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tools", "plot_trace"),
                           str(trace), str(png), "--top", "5"], capture_output=True, text=True)
    assert plot.returncode == 0, plot.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_no_trace_file_without_the_variable(tmp_path):
    run(tmp_path, {})
    assert not any(p.suffix == ".json" for p in tmp_path.iterdir())


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) not installed")
def test_taskset_one_cpu_means_one_thread(tmp_path):
    out = run(tmp_path, {}, prefix=("taskset", "-c", "0"))
    assert "WORKERS 0" in out  # the calling thread does all the work
    cpus = len(os.sched_getaffinity(0))
    out = run(tmp_path, {})
    assert f"WORKERS {cpus - 1}" in out


def test_cost_analysis_matches_the_cpu_backend():
    # compiler/cost.h: flops and transcendentals as XLA counts them (within 5%); bytes accessed
    # are counted per op before fusion, so they bound XLA's post-fusion count from above.
    def f(x, w, k):
        y = jnp.tanh(x @ w)
        z = jax.lax.conv_general_dilated(y[None, None], k, (1, 1), "SAME")
        return jnp.exp(z).sum() + y.max()

    args = (np.ones((64, 32), np.float32), np.ones((32, 16), np.float32),
            np.ones((4, 1, 3, 3), np.float32))
    costs = {}
    for platform in ("kiln", "cpu"):
        dev = jax.devices(platform)[0]
        compiled = jax.jit(f).lower(*[jax.device_put(a, dev) for a in args]).compile()
        costs[platform] = compiled.cost_analysis()
    for key in ("flops", "transcendentals"):
        assert costs["kiln"][key] == pytest.approx(costs["cpu"][key], rel=0.05), (key, costs)
    kiln_bytes, xla_bytes = costs["kiln"]["bytes accessed"], costs["cpu"]["bytes accessed"]
    assert 0.95 * xla_bytes <= kiln_bytes <= 4 * xla_bytes, costs


LOG_PROGRAM = r"""
import jax, jax.numpy as jnp
print(float(jax.jit(lambda x: (x * 2).sum())(jnp.arange(4.0))))
"""


@pytest.mark.parametrize("level,expect,absent", [
    ("info", ["client created: 1 device", "compiled jit_"], ["ran jit_"]),
    ("debug", ["client created", "compiled jit_", "ran jit_"], []),
    ("off", [], ["[kiln "]),
    ("loud", ["KILN_LOG_LEVEL=loud is not one of"], ["compiled jit_"]),
])
def test_log_level(tmp_path, level, expect, absent):
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu", KILN_LOG_LEVEL=level)
    proc = subprocess.run([sys.executable, "-c", LOG_PROGRAM], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "12.0", proc.stderr[-3000:]
    for text in expect:
        assert text in proc.stderr, (text, proc.stderr[-3000:])
    for text in absent:
        assert text not in proc.stderr, (text, proc.stderr[-3000:])
