#!/usr/bin/env python3
"""Writes the libFuzzer seed corpora in tests/fuzz/corpus/ from the committed fixtures.

  artifact_reader/<stem>  the fixture's portable artifact (<stem>.mlir.bc)
  pjrt_compile/<stem>     u16 little-endian length of the compile options, the options
                          (<stem>.compile_options.pb), then the artifact: the layout
                          tests/fuzz/pjrt_compile_fuzzer.cc reads
  hlo_reader/<name>       serialized HloModuleProtos of small JAX programs; not derived from the
                          fixtures but written by `tests/python/program_formats_hlo.py
                          --write-seeds` (needs jax), and kept as committed
  pjrt_topology/<counts>  a serialized Kiln topology with those devices per process (the layout
                          of pjrt/topology.cc: "KILNTOPO", u32 format 1, u32 processes, u64
                          devices per process), read by tests/fuzz/pjrt_topology_fuzzer.cc
  text_reader/<stem>      the fixture's MLIR text (<stem>.mlir)
  hlo_sharding/<n>        GSPMD sharding texts as JAX writes them in `mhlo.sharding` (SHARDINGS),
                          read by tests/fuzz/hlo_sharding_fuzzer.cc

Usage: tools/make_fuzz_corpus.py [--check]   (--check: fail if the committed corpus is stale)
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


SHARDINGS = [
    "{replicated}", "{manual}", "{maximal device=1}", "{unreduced}", "{devices=[2,2]0,2,1,3}",
    "{devices=[2,4]<=[8]}", "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
    "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}",
    "{{replicated}, {devices=[2]0,1}, /*index=2*/{maximal device=0}}",
    '{devices=[8]<=[8] metadata={op_name="jit(f)/x" source_file="f.py" source_line=3}}',
]


def expected() -> dict[Path, bytes]:
    out: dict[Path, bytes] = {}
    for bc in sorted(FIXTURES.glob("*.mlir.bc")):
        stem = bc.name[: -len(".mlir.bc")]
        art = bc.read_bytes()
        opts = (FIXTURES / f"{stem}.compile_options.pb").read_bytes()
        out[CORPUS / "artifact_reader" / stem] = art
        out[CORPUS / "pjrt_compile" / stem] = struct.pack("<H", len(opts)) + opts + art
        text = FIXTURES / f"{stem}.mlir"
        if text.is_file():
            out[CORPUS / "text_reader" / stem] = text.read_bytes()
    for seed in sorted((CORPUS / "hlo_reader").glob("*")):
        out[seed] = seed.read_bytes()
    for i, text in enumerate(SHARDINGS):
        out[CORPUS / "hlo_sharding" / str(i)] = text.encode()
    for counts in ((1,), (4,), (2, 2), (3, 1, 2)):
        name = "x".join(str(n) for n in counts)
        out[CORPUS / "pjrt_topology" / name] = (b"KILNTOPO" + struct.pack("<II", 1, len(counts))
                                           + b"".join(struct.pack("<Q", n) for n in counts))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    want = expected()
    if args.check:
        have = {p for p in CORPUS.rglob("*") if p.is_file()}
        stale = [str(p) for p, b in want.items() if not p.is_file() or p.read_bytes() != b]
        extra = [str(p) for p in have - set(want)]
        if stale or extra:
            print("stale fuzz corpus; run tools/make_fuzz_corpus.py:", *stale, *extra, sep="\n  ")
            return 1
        return 0
    for p, b in want.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b)
    print(f"wrote {len(want)} corpus files under {CORPUS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
