"""`jax.profiler.trace` collects Kiln's steps (the PJRT Profiler extension, pjrt/profiler.cc).

A jitted program runs on Kiln under `jax.profiler.trace(tmpdir)`; the `.xplane.pb` JAX writes is
read with the small protobuf reader below (tensorflow.profiler.XSpace, field numbers of
tsl/profiler/protobuf/xplane.proto) and must hold Kiln's plane, one line per thread that ran
steps, and events named after the program's ops ("stablehlo.dot_general (f32) at <file>:<line>")
that lie inside the traced window. Each check runs in a fresh process: the profiler session and
its plugin tracer belong to the process.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.requires_kiln

PLANE = "/device:CUSTOM:0"

PROGRAM = r"""
import sys, time
import numpy as np
import jax, jax.numpy as jnp
dev = jax.devices("kiln")[0]
x = jax.device_put(np.random.default_rng(0).normal(size=(64, 64)).astype(np.float32), dev)
f = jax.jit(lambda x: jnp.tanh(x @ x).sum())
f(x).block_until_ready()  # compiled outside the trace
jax.jit(lambda x: jnp.sin(x) * 3.0)(x).block_until_ready()  # never run inside it
with jax.profiler.trace(sys.argv[1]):
    for _ in range(3):
        f(x).block_until_ready()
f(x).block_until_ready()  # after the trace: not in it
print("OK")
"""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _fields(buf: bytes) -> dict[int, list]:
    """field number -> values (ints for varints, bytes for length-delimited)."""
    out: dict[int, list] = {}
    i = 0
    while i < len(buf):
        tag, i = _varint(buf, i)
        kind = tag & 7
        if kind == 0:
            value, i = _varint(buf, i)
        elif kind == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif kind == 1:
            value, i = buf[i:i + 8], i + 8
        elif kind == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {kind} at byte {i}")
        out.setdefault(tag >> 3, []).append(value)
    return out


def _planes(path: str) -> dict[str, dict]:
    """{plane name: {"lines": [(line name, [(event name, start_ns, duration_ns)])]}}."""
    with open(path, "rb") as f:
        space = _fields(f.read())
    planes = {}
    for raw in space.get(1, []):
        plane = _fields(raw)
        names = {}
        for entry in plane.get(4, []):  # map<int64, XEventMetadata>
            e = _fields(entry)
            meta = _fields(e[2][0])
            names[e[1][0]] = meta.get(2, [b""])[0].decode()
        lines = []
        for raw_line in plane.get(3, []):
            line = _fields(raw_line)
            ts = line.get(3, [0])[0]
            events = []
            for raw_event in line.get(4, []):
                ev = _fields(raw_event)
                events.append((names.get(ev.get(1, [0])[0], "?"),
                               ts + ev.get(2, [0])[0] / 1000, ev.get(3, [0])[0] / 1000))
            lines.append((line.get(2, [b""])[0].decode(), events))
        planes[plane.get(2, [b""])[0].decode()] = {"lines": lines}
    return planes


def _run(tmp_path, extra_env=None) -> tuple[dict[str, dict], str]:
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu", **(extra_env or {}))
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path / "trace")], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]
    files = glob.glob(str(tmp_path / "trace" / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert len(files) == 1, files
    return _planes(files[0]), os.path.dirname(files[0])


def test_kiln_ops_appear_in_the_jax_trace(tmp_path):
    planes, run_dir = _run(tmp_path)
    assert PLANE in planes, sorted(planes)
    lines = planes[PLANE]["lines"]
    assert lines and all(name.startswith("Kiln thread ") for name, _ in lines)
    events = [e for _, evs in lines for e in evs]
    names = [name for name, _, _ in events]
    dots = [n for n in names if n.startswith("stablehlo.dot_general (f32) at ")]
    # Three runs inside the trace, none of the runs before or after it.
    assert len(dots) == 3, names
    assert "<string>" in dots[0]  # the op's source line
    assert any(n.startswith("stablehlo.tanh") for n in names), names
    assert not any(n.startswith("stablehlo.sine") for n in names), names
    assert all(d >= 0 for _, _, d in events)
    # Kiln's events share the session's clock: they lie between the trace's first and last host
    # events (JAX's own planes, e.g. /host:CPU, on the same time base).
    host = [e for name, p in planes.items() if name.startswith("/host:")
            for _, evs in p["lines"] for e in evs]
    if host:
        lo = min(s for _, s, _ in host)
        hi = max(s + d for _, s, d in host)
        assert all(lo - 1e6 <= s and s + d <= hi + 1e6 for _, s, d in events), (lo, hi)
    # The trace-event JSON JAX writes beside it (what Perfetto opens) shows them too, with their
    # op family.
    (json_file,) = glob.glob(os.path.join(run_dir, "*.trace.json.gz"))
    with gzip.open(json_file, "rt") as f:
        trace_events = json.load(f)["traceEvents"]
    pids = {e["pid"] for e in trace_events
            if e.get("ph") == "M" and e.get("name") == "process_name"
            and e["args"]["name"] == PLANE}
    shown = [e for e in trace_events if e.get("ph") == "X" and e["pid"] in pids]
    assert sorted(e["name"] for e in shown) == sorted(names)
    assert {e["args"]["family"] for e in shown if "dot_general" in e["name"]} == {"linalg"}


def test_kiln_trace_file_and_profiler_together(tmp_path):
    trace = tmp_path / "kiln.json"
    planes, _ = _run(tmp_path, {"KILN_TRACE": str(trace)})
    assert trace.exists()
    names = [n for _, evs in planes[PLANE]["lines"] for n, _, _ in evs]
    assert sum(n.startswith("stablehlo.dot_general") for n in names) == 3
