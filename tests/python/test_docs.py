"""Docs that must agree with the tree: the README shows the committed benchmark table exactly as
`bench/run` wrote it (bench/results/latest.md), and tests/python/README.md lists every test file
of this directory."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- bench/run table: begin -->", "<!-- bench/run table: end -->"


def test_readme_shows_the_committed_benchmark_table():
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme
    shown = readme[readme.index(BEGIN) + len(BEGIN):readme.index(END)].strip()
    table = (ROOT / "bench" / "results" / "latest.md").read_text().split("\n", 2)[2].strip()
    assert shown == table, "README.md's table differs from bench/results/latest.md: run bench/run"


def test_the_tests_readme_lists_every_test_file():
    listed = (Path(__file__).parent / "README.md").read_text()
    missing = [p.name for p in sorted(Path(__file__).parent.glob("test_*.py"))
               if f"`{p.name}`" not in listed]
    assert not missing, f"tests/python/README.md does not describe {missing}"
