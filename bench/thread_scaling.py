#!/usr/bin/env python3
"""Kiln on one thread against Kiln on two (issue 35's scaling table): runs `bench/run --kinds run`
twice, with KILN_NUM_THREADS=1 and KILN_NUM_THREADS=2 (each run also times XLA:CPU, untouched),
and prints, for every program whose Kiln time is above --min-ms on either run, the two Kiln times
and their quotient. A quotient t2/t1 below 1 means the second thread helps; the last line counts
the programs above --min-ms where it does not.

Usage: bench/thread_scaling.py [--filter REGEX] [--min-ms 1.0] [--out DIR] [--quick] [--two JSON]
--two JSON: take the 2-thread figures from an existing bench/run output (e.g. a full run into
bench/results on a 2-core machine, where Kiln's default is two threads) instead of a second run.
Writes DIR/threads-1/latest.json, DIR/threads-2/latest.json and DIR/threads.md (default DIR:
a temporary directory; nothing under bench/results is touched).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(threads: int, out: Path, args) -> dict:
    env = dict(os.environ, KILN_NUM_THREADS=str(threads))
    cmd = [sys.executable, str(HERE / "run"), "--kinds", "run", "--out", str(out)]
    if args.filter:
        cmd += ["--filter", args.filter]
    if args.quick:
        cmd.append("--quick")
    print(f"[threads] {' '.join(cmd)} with KILN_NUM_THREADS={threads}", flush=True)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    data = json.loads((out / "latest.json").read_text())
    return {r["name"]: r for r in data["results"] if r["kind"] == "run"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--filter", default="")
    ap.add_argument("--min-ms", type=float, default=1.0)
    ap.add_argument("--out", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--two", default="", help="latest.json of an existing 2-thread run")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="kiln-threads-"))
    one = run(1, out / "threads-1", args)
    if args.two:
        data = json.loads(Path(args.two).read_text())
        two = {r["name"]: r for r in data["results"] if r["kind"] == "run"}
    else:
        two = run(2, out / "threads-2", args)
    lines = ["| program | Kiln, 1 thread | Kiln, 2 threads | 2 / 1 | XLA:CPU (2-thread run) |",
             "|---|---|---|---|---|"]
    slower = []
    for name in sorted(one, key=lambda n: -(one[n]["kiln_s"] or 0)):
        if name not in two or one[name]["kiln_s"] is None or two[name]["kiln_s"] is None:
            continue
        t1, t2 = one[name]["kiln_s"], two[name]["kiln_s"]
        if max(t1, t2) * 1e3 <= args.min_ms:
            continue
        q = t2 / t1
        if q >= 1.0:
            slower.append(name)
        xla = two[name]["xla_s"]
        lines.append(f"| {name} | {t1 * 1e3:.3f} ms | {t2 * 1e3:.3f} ms | {q:.2f} | "
                     f"{xla * 1e3:.3f} ms |" if xla else f"| {name} | {t1 * 1e3:.3f} ms | "
                     f"{t2 * 1e3:.3f} ms | {q:.2f} | — |")
    n = len(lines) - 2
    lines.append("")
    lines.append(f"{n} programs above {args.min_ms} ms; two threads not faster on {len(slower)}"
                 + (f": {', '.join(slower)}" if slower else ""))
    text = "\n".join(lines) + "\n"
    (out / "threads.md").write_text(text)
    print(text)
    print(f"[threads] written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
