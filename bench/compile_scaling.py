#!/usr/bin/env python3
"""How compile time grows with program size: the transformer of bench/programs.py (width 128,
value and grad) at 2, 6, 12 and 24 layers, Kiln against XLA:CPU in one process.

Per size: the `.compile()` stage of a cold `jax.jit(f).lower(*args).compile()` on each backend
(median of --reps), and, from a KILN_TRACE of the same compiles, Kiln's own PJRT_Client_Compile
and its phases (runtime/trace.h): what Kiln does, apart from jaxlib serializing the program and
building its executable around it. The last columns are Kiln's own time per layer beyond the
2-layer program, which should stay flat, and Kiln's own time over XLA:CPU's whole compile.

Usage: bench/compile_scaling.py [--layers 2,6,12,24] [--reps 3]
Prints a markdown table; each size runs in a child process (the trace is written at its exit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PHASES = ("compile: read program", "compile: build program", "compile: fuse",
          "compile: native code")


def child(layers: int, reps: int) -> None:
    sys.path.insert(0, str(HERE))
    import jax

    from programs import transformer_value_and_grad
    fn, host = transformer_value_and_grad(layers)
    out = {}
    for platform in ("kiln", "cpu"):
        args = jax.device_put(host, jax.devices(platform)[0])
        times = []
        for _ in range(reps):
            jax.clear_caches()
            lowered = jax.jit(fn).lower(*args)
            t0 = time.perf_counter()
            lowered.compile()
            times.append(time.perf_counter() - t0)
        out[platform] = statistics.median(times)
    print(json.dumps(out))


def kiln_phases(trace: Path) -> dict[str, float]:
    """Median per compile of PJRT_Client_Compile, and the phases' totals per compile, in s."""
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    compiles = [e["dur"] / 1e6 for e in events
                if e.get("cat") == "compile" and e.get("name") == "PJRT_Client_Compile"]
    out = {"PJRT_Client_Compile": statistics.median(compiles)}
    for phase in PHASES:
        out[phase] = sum(e["dur"] / 1e6 for e in events
                         if e.get("cat") == "compile" and e.get("name") == phase) / len(compiles)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="2,6,12,24")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.reps)
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (int(x) for x in args.layers.split(",")):
            trace = Path(tmp) / f"trace{layers}.json"
            env = dict(os.environ, KILN_TRACE=str(trace), JAX_PLATFORMS="kiln,cpu")
            got = subprocess.run([sys.executable, __file__, "--child", str(layers),
                                  "--reps", str(args.reps)], env=env, check=True,
                                 capture_output=True, text=True)
            stages = json.loads(got.stdout.strip().splitlines()[-1])
            rows.append((layers, stages, kiln_phases(trace)))
    ms = lambda s: f"{s * 1e3:.1f}"  # noqa: E731
    print("| layers | Kiln `.compile()` | XLA:CPU `.compile()` | ratio | Kiln's own "
          "PJRT_Client_Compile | read / build / fuse / native code | own / XLA | own per "
          "layer beyond 2 |")
    print("|---|---|---|---|---|---|---|---|")
    base_layers, _, base = rows[0]
    for layers, stages, phases in rows:
        own = phases["PJRT_Client_Compile"]
        per = ((own - base["PJRT_Client_Compile"]) / (layers - base_layers)
               if layers != base_layers else None)
        split = " / ".join(ms(phases[p]) for p in PHASES)
        print(f"| {layers} | {ms(stages['kiln'])} ms | {ms(stages['cpu'])} ms | "
              f"{stages['kiln'] / stages['cpu']:.3f} | {ms(own)} ms | {split} ms | "
              f"{own / stages['cpu']:.3f} | {'—' if per is None else ms(per) + ' ms'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
