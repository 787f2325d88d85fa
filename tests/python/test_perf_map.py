"""KILN_PERF_MAP=1: Kiln lists the code it generates in perf's map of JIT-compiled code
(/tmp/perf-<pid>.map), one symbol per loop step, named after the step's op and its source
location, so `perf report` attributes samples in generated code to the user's program.

Each test runs a program in a fresh process (the switch is read once per process) and checks the
map that process left: well-formed lines, no overlapping symbols, steps named after the ops of
the program with its source file, and the program's results still equal to XLA:CPU's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.requires_kiln

PROGRAM = textwrap.dedent("""
    import os
    import numpy as np
    import jax, jax.numpy as jnp

    def loop(x, k):
        def body(i, c):
            return jnp.where(c > k, c * 0.5, c + i.astype(c.dtype))
        return jax.lax.fori_loop(0, 40, body, x)

    def fused(a, b):
        return jnp.tanh(a) * b + jnp.exp(-a * a) - b / (1.0 + a * a)

    x = np.linspace(-2.0, 3.0, 4, dtype=np.float32)
    a = np.linspace(-1.0, 1.0, 4096, dtype=np.float32)
    b = np.cos(a).astype(np.float32)
    for f, args in ((loop, (x, np.float32(7.0))), (fused, (a, b))):
        got = jax.jit(f, device=jax.devices("kiln")[0])(*args)
        want = jax.jit(f, device=jax.devices("cpu")[0])(*args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    print("PID", os.getpid())
""")


def run(tmp_path, perf_map: bool) -> tuple[int, str]:
    script = tmp_path / "perf_map_program.py"
    script.write_text(PROGRAM)
    env = dict(os.environ)
    env.pop("KILN_PERF_MAP", None)
    if perf_map:
        env["KILN_PERF_MAP"] = "1"
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    pid = int(re.search(r"^PID (\d+)$", done.stdout, re.M).group(1))
    return pid, str(script)


def has_avx() -> bool:
    with open("/proc/cpuinfo") as f:
        return re.search(r"^flags\s*:.*\bavx\b", f.read(), re.M) is not None


@pytest.mark.skipif(not has_avx(), reason="native code needs AVX")
def test_generated_code_is_named_per_step_in_perfs_map(tmp_path):
    pid, script = run(tmp_path, perf_map=True)
    path = f"/tmp/perf-{pid}.map"
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    finally:
        if os.path.exists(path):
            os.unlink(path)
    symbols = []
    for line in lines:
        m = re.fullmatch(r"([0-9a-f]+) ([0-9a-f]+) (kiln .+)", line)
        assert m, f"malformed perf map line: {line!r}"
        start, size = int(m.group(1), 16), int(m.group(2), 16)
        assert start > 0 and size > 0, line
        symbols.append((start, start + size, m.group(3)))
    symbols.sort()
    for (s0, e0, n0), (s1, _, n1) in zip(symbols, symbols[1:]):
        assert e0 <= s1, f"overlapping symbols: {n0!r} and {n1!r}"
    names = [n for _, _, n in symbols]
    loop_steps = [n for n in names if n.startswith("kiln KILN_LOOP_JIT_DUMP.") and " step " in n]
    # The loop's condition (the counter's compare) and its body (the counter's add, the float
    # update fused into one run), each named with its op and the program's file and line.
    assert any(" cond step " in n and "stablehlo.compare" in n and f"{script}:9:" in n
               for n in loop_steps), loop_steps
    assert any(" cond step " not in n and "stablehlo.add (i32)" in n and f"{script}:9:" in n
               for n in loop_steps), loop_steps
    assert any("fused" in n and f"{script}:8:" in n for n in loop_steps), loop_steps
    # The fused run of `fused` (4,096 f32 elements: native code) is one symbol.
    assert any(n.startswith("kiln KILN_FUSED_JIT_DUMP.") for n in names), names


def test_no_perf_map_without_the_switch(tmp_path):
    pid, _ = run(tmp_path, perf_map=False)
    assert not os.path.exists(f"/tmp/perf-{pid}.map")
