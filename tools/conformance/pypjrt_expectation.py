#!/usr/bin/env python3
"""Writes tools/conformance/pypjrt_expected.json, the expectation tests/python/test_pypjrt_conform.py
holds Kiln to, from two `python -m pypjrt.conform LIB.so --json F` reports:

  * the reference: XLA's CPU plugin as a PJRT C API library, `pjrt_c_api_cpu_plugin.so` from the
    PyPI wheel lammps-jax-pjrt-cpu (0.11.2 when this was written):
        pip download --no-deps lammps-jax-pjrt-cpu==0.11.2 && unzip lammps_jax_pjrt_cpu-*.whl
        python -m pypjrt.conform lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so --json xla.json
  * Kiln: python -m pypjrt.conform build/dev/libkiln_pjrt.so --json kiln.json

must_pass is every check either passes (Kiln must not lose what it already does, nor fall short of
the reference), min_pass its size.

  tools/conformance/pypjrt_expectation.py xla.json kiln.json
"""

from __future__ import annotations

import argparse
import json
import os


def passes(report: dict) -> set[str]:
    return {c["id"] for c in report["checks"] if c["result"] == "pass"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", help="pypjrt.conform JSON of XLA's CPU plugin")
    parser.add_argument("kiln", help="pypjrt.conform JSON of Kiln")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__),
                                                      "pypjrt_expected.json"))
    args = parser.parse_args()
    with open(args.reference) as f:
        reference = json.load(f)
    with open(args.kiln) as f:
        kiln = json.load(f)
    ref, own = passes(reference), passes(kiln)
    out = {
        "reference": {"plugin": reference["plugin"], "api_version": reference["api_version"],
                      "passed": sorted(ref)},
        "kiln_beyond_reference": sorted(own - ref),
        "must_pass": sorted(ref | own),
        "min_pass": len(ref | own),
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(ref)} reference passes, {len(own)} Kiln passes, "
          f"must pass {len(ref | own)}; Kiln still misses {sorted(ref - own)}")


if __name__ == "__main__":
    main()
