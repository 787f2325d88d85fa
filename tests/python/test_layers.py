"""The layers (cmake/KilnLayers.cmake) as the code really is: every #include of Kiln's own headers
stays within the folders a layer may see, every source folder is a layer, and docs/architecture.md
shows the table the build uses. (The build enforces the same rule for what it compiles: each
layer's sources see only the allowed folders; this test also covers headers no source includes.)"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOT_LAYERS = {"tests", "tools", "bench", "python", "third_party", "examples", "docs", "scripts",
              "cmake", "build", "bench", ".venv", ".git", ".ci"}


def layers():
    text = (ROOT / "cmake" / "KilnLayers.cmake").read_text()
    order = re.search(r"^set\(KILN_LAYERS ([^)]*)\)", text, re.M).group(1).split()
    deps = {}
    for m in re.finditer(r"^set\(KILN_LAYER_DEPS_(\w+)\s*([^)]*)\)", text, re.M):
        deps[m.group(1)] = [d for d in m.group(2).replace('""', "").split()]
    assert set(deps) == set(order), "every layer needs a KILN_LAYER_DEPS_ line"
    return order, deps


def closure(layer, deps):
    seen, todo = [], [layer]
    while todo:
        l = todo.pop(0)
        if l not in seen:
            seen.append(l)
            todo.extend(deps[l])
    return set(seen)


def test_dependencies_point_down_only():
    order, deps = layers()
    for layer, ds in deps.items():
        for d in ds:
            assert order.index(d) < order.index(layer), f"{layer} -> {d} points up the order"


def test_every_include_stays_within_its_layer():
    order, deps = layers()
    bad = []
    for layer in order:
        allowed = closure(layer, deps)
        for path in sorted((ROOT / layer).rglob("*")):
            if path.suffix not in (".h", ".cc", ".inc"):
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                if m and m.group(1) in order and m.group(1) not in allowed:
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {layer}/ includes {m.group(1)}/")
    assert not bad, "upward or undeclared includes:\n" + "\n".join(bad)


def test_every_source_folder_is_a_layer():
    order, _ = layers()
    for d in ROOT.iterdir():
        if not d.is_dir() or d.name in NOT_LAYERS or d.name.startswith("."):
            continue
        if any(p.suffix in (".h", ".cc") for p in d.rglob("*")):
            assert d.name in order, f"{d.name}/ holds C++ but is not in cmake/KilnLayers.cmake"


def architecture_table():
    order, deps = layers()
    lines = ["| layer | includes directly |", "|---|---|"]
    for layer in reversed(order):
        lines.append(f"| `{layer}/` | " + (", ".join(f"`{d}/`" for d in deps[layer]) or "nothing") + " |")
    return "\n".join(lines)


def test_architecture_doc_shows_the_build_graph():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    m = re.search(r"<!-- layers: begin[^>]*-->\n(.*?)\n<!-- layers: end -->", doc, re.S)
    assert m, "docs/architecture.md lacks the <!-- layers: begin/end --> block"
    assert m.group(1).strip() == architecture_table(), (
        "docs/architecture.md's layer table differs from cmake/KilnLayers.cmake; it should read:\n"
        + architecture_table())


def test_only_codegen_sees_the_assembler():
    """Xbyak (the JIT assembler) stays inside codegen/: the layers above call its builders through
    headers that do not include it (codegen/native_math.h, native_loop.h, fused_native.h)."""
    order, _ = layers()
    bad = []
    for layer in order:
        if layer == "codegen":
            continue
        for path in sorted((ROOT / layer).rglob("*")):
            if path.suffix in (".h", ".cc") and "<xbyak/" in path.read_text(errors="replace"):
                bad.append(str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "codegen").glob("*.h")):
        text = path.read_text()
        if path.name in ("native_math.h", "native_loop.h", "fused_native.h") and "<xbyak/" in text:
            bad.append(f"{path.relative_to(ROOT)} (a builder header other layers include)")
    assert not bad, "the assembler leaks out of codegen/: " + ", ".join(bad)


def test_only_distributed_sees_gloo():
    """Gloo (third_party/gloo, the cross-process transport) stays inside distributed/: the rest of
    Kiln codes against runtime/network.h."""
    order, _ = layers()
    bad = []
    for layer in order:
        if layer == "distributed":
            continue
        for path in sorted((ROOT / layer).rglob("*")):
            if path.suffix in (".h", ".cc") and re.search(r'#\s*include\s*[<"]gloo/',
                                                          path.read_text(errors="replace")):
                bad.append(str(path.relative_to(ROOT)))
    assert not bad, "Gloo leaks out of distributed/: " + ", ".join(bad)
