"""Every dtype switch comes from the one dtype table (issue 33): ir/dtype_table.h lists the element
types with their properties, and ir/dtype_dispatch.h generates the one dispatcher from it. A
`case DType::...` (or a `using enum DType` that would hide one) anywhere else in Kiln's C++ is a
second list of types to keep in step, so it fails here unless the line, or the line before it,
says why it is not a dtype dispatch: `// not a dtype dispatch: <reason>`."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The table and the dispatcher generated from it: the only files that may name every type.
TABLE_FILES = {"ir/dtype_table.h", "ir/dtype_dispatch.h"}
NOT_SCANNED = {"build", "third_party", ".venv", ".git"}
MARKER = "// not a dtype dispatch:"
SWITCH = re.compile(r"\bcase\s+(?:::)?(?:kiln\s*::\s*)?(?:ir\s*::\s*)?DType\s*::"
                    r"|\busing\s+enum\s+(?:::)?(?:kiln\s*::\s*)?(?:ir\s*::\s*)?DType\b")


def cpp_files():
    for top in sorted(ROOT.iterdir()):
        if not top.is_dir() or top.name in NOT_SCANNED or top.name.startswith("."):
            continue
        for path in sorted(top.rglob("*")):
            if path.suffix in (".h", ".cc", ".inc") and path.is_file():
                yield path


def unexplained_switches(text):
    """Line numbers of dtype cases in `text` without the marker on their line or the one before."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if SWITCH.search(line.split("//")[0]) is None:
            continue
        if MARKER in line or (i > 0 and MARKER in lines[i - 1]):
            continue
        found.append(i + 1)
    return found


def test_the_table_files_exist():
    for name in TABLE_FILES:
        assert (ROOT / name).is_file(), f"{name} is gone: update TABLE_FILES"
    assert "#define KILN_DTYPES(X)" in (ROOT / "ir/dtype_table.h").read_text()


def test_no_dtype_switch_outside_the_table():
    bad = []
    for path in cpp_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel in TABLE_FILES:
            continue
        for n in unexplained_switches(path.read_text(errors="replace")):
            bad.append(f"{rel}:{n}")
    assert not bad, (
        "dtype switches outside ir/dtype_table.h: dispatch through ir::VisitDType "
        "(kernels: kernels::Dispatch) or read a property of the table instead, or mark a switch "
        f"that is not a dtype dispatch with '{MARKER} <reason>' on its line or the one before:\n"
        + "\n".join(bad))


def test_the_checker_catches_switches():
    assert unexplained_switches("switch (t) {\n  case ir::DType::kF32:\n    return 4;\n}") == [2]
    assert unexplained_switches("case DType::kS8: break;") == [1]
    assert unexplained_switches("case kiln::ir::DType::kPred:") == [1]
    assert unexplained_switches("  using enum ir::DType;") == [1]
    assert unexplained_switches(f"{MARKER} picks an instruction\ncase DType::kS8:") == []
    assert unexplained_switches(f"case DType::kS8:  {MARKER} a width") == []
    assert unexplained_switches("// case DType::kF32: in a comment\nx = DType::kF32;") == []


def test_one_pred_type():
    # ir::PredByte is the storage of i1; kernels' old uint8_t alias must not come back.
    bad = [path.relative_to(ROOT).as_posix() for path in cpp_files()
           if re.search(r"\busing\s+pred_t\b", path.read_text(errors="replace"))]
    assert not bad, "a second pred type (use ir::PredByte): " + ", ".join(bad)
