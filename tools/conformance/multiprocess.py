#!/usr/bin/env python3
"""Runs JAX's multi-process test files (`tests/multiprocess/` of a jax-ml/jax checkout at the tag of
the installed jax; never commit it) on Kiln or on JAX's CPU backend, and compares with a baseline.

Each file is its own launcher (jax._src.test_multiprocess): `python all_reduce_test.py
--num_processes=2` starts the workers on loopback, each runs `jax.distributed.initialize` and the
file's tests, and leaves its log in TEST_UNDECLARED_OUTPUTS_DIR. This tool runs every file that
way under a timeout, reads each worker's unittest summary, and counts a test as passed when it
passed in every process.

  * kiln: JAX_PLATFORMS=kiln,cpu, KILN_DEVICE_COUNT=<devices per process>, JAX_TEST_DUT=cpu (the
          tests' device checks treat Kiln as the CPU backend it stands in for).
  * cpu:  JAX_PLATFORMS=cpu, --cpu_collectives_implementation=gloo, <devices per process> CPU
          devices (--jax_num_cpu_devices).

  tools/conformance/multiprocess.py --jax-src ~/jax --backend cpu --json cpu.json
  tools/conformance/multiprocess.py --jax-src ~/jax --backend kiln --baseline cpu.json

With --baseline, the exit status is 1 when a file passes fewer tests than the baseline or a test
the baseline passes fails; a file that crashes or times out also gives 1. The last line is
`multiprocess: N passed, M failed, K skipped (baseline B passed)`.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

FILES = ["all_gather_test.py", "all_reduce_test.py", "all_to_all_test.py", "array_test.py",
         "axis_index_test.py", "colocated_python_test.py", "device_id_test.py",
         "host_callback_test.py", "key_value_store_test.py", "multihost_utils_test.py",
         "pgle_test.py", "pjit_test.py", "pmap_test.py", "socket_transfer_test.py",
         "thread_guard_test.py", "wait_barrier_test.py"]

RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s", re.MULTILINE)
OUTCOME = re.compile(r"^(OK|FAILED)(?: \((.*)\))?$", re.MULTILINE)
BAD = re.compile(r"^(?:FAIL|ERROR): (\w+) \(", re.MULTILINE)


def parse_worker(log: str) -> dict:
    """One worker's unittest summary: ran, skipped, and the names of failing tests."""
    ran = RAN.findall(log)
    outcome = OUTCOME.findall(log)
    if not ran or not outcome:
        return {"crashed": True}
    counts = dict(re.findall(r"(\w+)=(\d+)", outcome[-1][1] or ""))
    return {"crashed": False, "ran": int(ran[-1]), "skipped": int(counts.get("skipped", 0)),
            "failed": sorted(set(BAD.findall(log)))}


def run_file(path: pathlib.Path, args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    cmd = [sys.executable, path.name, f"--num_processes={args.num_processes}"]
    if args.backend == "kiln":
        env.update(JAX_PLATFORMS="kiln,cpu", KILN_DEVICE_COUNT=str(args.devices),
                   JAX_TEST_DUT="cpu")
    else:
        env["JAX_PLATFORMS"] = "cpu"
        cmd += ["--cpu_collectives_implementation=gloo",
                f"--extra_test_args=--jax_num_cpu_devices={args.devices}"]
    with tempfile.TemporaryDirectory() as out:
        env["TEST_UNDECLARED_OUTPUTS_DIR"] = out
        try:
            proc = subprocess.run(cmd, cwd=path.parent, env=env, capture_output=True, text=True,
                                  timeout=args.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        workers = []
        for i in range(args.num_processes):
            log = pathlib.Path(out, f"jax_{i}_stderr.log")
            workers.append(parse_worker(log.read_text(errors="replace") if log.exists() else ""))
    if timed_out or any(w["crashed"] for w in workers):
        return {"status": "timeout" if timed_out else "crashed", "passed": 0, "skipped": 0,
                "failed": []}
    failed = sorted(set(sum((w["failed"] for w in workers), [])))
    ran = min(w["ran"] for w in workers)
    skipped = max(w["skipped"] for w in workers)
    return {"status": "ok" if proc.returncode == 0 else "failed",
            "passed": ran - skipped - len(failed), "skipped": skipped, "failed": failed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jax-src", required=True, type=pathlib.Path)
    ap.add_argument("--backend", choices=["kiln", "cpu"], default="kiln")
    ap.add_argument("--num-processes", type=int, default=2)
    ap.add_argument("--devices", type=int, default=1, help="devices per process")
    ap.add_argument("--files", default=",".join(FILES))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", type=pathlib.Path, help="write the results here")
    ap.add_argument("--baseline", type=pathlib.Path, help="results to compare with (e.g. CPU's)")
    args = ap.parse_args()
    base = json.loads(args.baseline.read_text()) if args.baseline else None
    results, bad = {}, False
    for name in args.files.split(","):
        r = run_file(args.jax_src / "tests" / "multiprocess" / name, args)
        results[name] = r
        note = ""
        if base is not None and name in base:
            b = base[name]
            lost = r["passed"] < b["passed"] or set(r["failed"]) - set(b["failed"])
            note = f"  (baseline {b['passed']} passed)" + ("  LOST" if lost else "")
            bad |= bool(lost)
        bad |= r["status"] in ("timeout", "crashed")
        print(f"{name:28} {r['status']:8} passed {r['passed']:3} skipped {r['skipped']:3} "
              f"failed {len(r['failed']):2}{note} {' '.join(r['failed'])}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    total = {k: sum(r[k] if k != "failed" else len(r[k]) for r in results.values())
             for k in ("passed", "skipped", "failed")}
    base_total = sum(b["passed"] for n, b in base.items() if n in results) if base else None
    print(f"multiprocess: {total['passed']} passed, {total['failed']} failed, "
          f"{total['skipped']} skipped" +
          (f" (baseline {base_total} passed)" if base_total is not None else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
