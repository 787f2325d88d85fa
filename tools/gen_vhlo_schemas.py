#!/usr/bin/env python3
r"""Generate Kiln's VHLO op schema table (ingest/vhlo_op_schemas.inc).

Why this exists
---------------
In MLIR bytecode v6+, an op's inherent attributes are encoded as ODS
"properties": a bare list of attribute indices, one per declared attribute,
ordered by attribute *name* (byte-wise ascending, as std::string / StringRef
compare).  The names themselves are not in the bytecode, so a reader needs,
per VHLO op, the sorted attribute-name list.  This script derives it from
StableHLO's `stablehlo/dialect/VhloOps.td`.

Usage
-----
    python3 tools/gen_vhlo_schemas.py VhloOps.td \
        --version-h Version.h --source-commit <stablehlo sha> \
        -o ingest/vhlo_op_schemas.inc

To get the inputs from a bare clone of openxla/stablehlo at <dir>:
    git -C <dir> show HEAD:stablehlo/dialect/VhloOps.td > /tmp/VhloOps.td
    git -C <dir> show HEAD:stablehlo/dialect/Version.h  > /tmp/Version.h
    git -C <dir> rev-parse HEAD

Output format (C++ preprocessor data table)
-------------------------------------------
The .inc contains two X-macro tables; the includer defines the macro(s) it
wants before including.  A macro that is not defined is skipped (the .inc
defines it as empty and #undefs it again afterwards).

    KILN_VHLO_OP(vhlo_name, shlo_name, min_version, max_version,
                 ATTRS, regions)
        vhlo_name    string literal, e.g. "vhlo.dot_general_v2"
        shlo_name    string literal, the StableHLO/func op it stands for,
                     e.g. "stablehlo.dot_general", "func.func"
        min_version  string literal, e.g. "0.9.0"
        max_version  string literal, e.g. "1.4.0" or "current"
        ATTRS        brace list of string literals, the inherent attribute
                     names in property (byte-wise ascending) order, e.g.
                     {"compare_type", "comparison_direction"} or {}.
        regions      int: number of regions; -1 = variadic regions

    NOTE: the preprocessor does not treat braces as grouping, so the commas
    inside ATTRS split it into several macro arguments.  The macro MUST be
    declared variadic after the fourth parameter:
        #define KILN_VHLO_OP(vhlo, shlo, min, max, ...)  \
            {vhlo, shlo, min, max, __VA_ARGS__},
    where __VA_ARGS__ expands to `{"a", "b", ...}, regions`, which is exactly
    the tail of an aggregate initializer such as
        struct Schema { const char *vhlo, *shlo, *min, *max;
                        std::initializer_list<const char*> attrs;
                        int regions; };
        static const Schema kOps[] = {
        #include "ingest/vhlo_op_schemas.inc"
        };
    Use plain braces as above, not `Schema{...}`: clang 14 does not extend
    the lifetime of an initializer_list's backing array when the element is
    written as a typed temporary (the list then reads as dangling).

    KILN_VHLO_VERSION_CURRENT(version)
        version      string literal, the VHLO "current" version, e.g. "1.20.0"

Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field

# --------------------------------------------------------------------------
# TableGen-ish lexing helpers
# --------------------------------------------------------------------------


def strip_comments(text: str) -> str:
    """Remove // line comments and /* */ block comments, keeping string
    literals ("...") and code blocks ([{ ... }]) intact.  Newlines are kept
    so that positions stay meaningful for error messages."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("[{", i):
            j = text.find("}]", i + 2)
            if j < 0:
                raise ValueError("unterminated [{ code block")
            out.append(text[i:j + 2])
            i = j + 2
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    j += 1
                j += 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("unterminated /* comment")
            out.append("\n" * text.count("\n", i, j + 2))
            i = j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_close(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Given text[start] == open_ch, return the index of its matching
    close_ch, skipping string literals and [{ }] code blocks."""
    assert text[start] == open_ch, (text[start], open_ch)
    depth = 0
    i, n = start, len(text)
    while i < n:
        if text.startswith("[{", i):
            j = text.find("}]", i + 2)
            if j < 0:
                raise ValueError("unterminated [{ code block")
            i = j + 2
            continue
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    j += 1
                j += 1
            i = j + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unbalanced {open_ch}{close_ch} starting at {start}")


def split_top_level(s: str) -> list[str]:
    """Split on commas not nested in <> () [] {}."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for c in s:
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


def dag_body(body: str, let_name: str, dag_op: str) -> str | None:
    """Return the inside of `let <let_name> = (<dag_op> ...)` or None."""
    m = re.search(r"\blet\s+" + let_name + r"\s*=\s*\(", body)
    if not m:
        return None
    lp = m.end() - 1
    rp = match_close(body, lp, "(", ")")
    inner = body[lp + 1:rp].strip()
    if not re.match(dag_op + r"\b", inner):
        raise ValueError(f"`let {let_name}` is not a ({dag_op} ...) dag")
    return inner[len(dag_op):].strip()


# --------------------------------------------------------------------------
# Classification of `arguments` entries
# --------------------------------------------------------------------------

# Operand constraints: VHLO uses VHLO_AnyType and Variadic<VHLO_AnyType>.
_OPERAND_RE = re.compile(
    r"^(Variadic<.*>|Optional<.*>|VariadicOfVariadic<.*>|\w*Type|\w*Tensor)$")
# Attribute constraints: VHLO uses VHLO_AnyAttr.  Anything else that looks
# like an attribute is rejected below unless it is a plain required attr.
_REQUIRED_ATTR_RE = re.compile(r"^\w*Attr$")
_OTHER_ATTR_RE = re.compile(
    r"^(OptionalAttr|DefaultValuedAttr|DefaultValuedOptionalAttr|"
    r"ConfinedAttr|\w*Prop|\w*Property)\b")


@dataclass
class OpSchema:
    record: str
    mnemonic: str
    min_version: str
    max_version: str
    attrs: list[str] = field(default_factory=list)      # declaration order
    regions: int = 0                                    # -1 = variadic

    @property
    def vhlo_name(self) -> str:
        return "vhlo." + self.mnemonic

    @property
    def sorted_attrs(self) -> list[str]:
        # ODS property order: ascending by name, compared byte-wise
        # (llvm::StringRef::compare == std::string operator<).  Sorting the
        # UTF-8 bytes makes that explicit regardless of Python's str order.
        return sorted(self.attrs, key=lambda s: s.encode("utf-8"))

    @property
    def shlo_name(self) -> str:
        base = re.sub(r"_v\d+$", "", self.mnemonic)
        special = {
            "func": "func.func",
            "call": "func.call",
            # Inside func bodies the StableHLO-side op is func.return; we
            # keep stablehlo.return here and let the reader decide by parent.
            "return": "stablehlo.return",
        }
        return special.get(base, "stablehlo." + base)


_OP_HEADER_RE = re.compile(
    r"\bdef\s+(\w+)\s*:\s*VHLO_Op\s*<\s*"
    r'"([^"]+)"\s*,\s*"([^"]+)"\s*,\s*"([^"]+)"')


def parse_ops(td_text: str) -> list[OpSchema]:
    text = strip_comments(td_text)
    ops: list[OpSchema] = []
    for m in _OP_HEADER_RE.finditer(text):
        record, mnem, vmin, vmax = m.groups()
        # The record body is the first top-level `{` after the header (the
        # optional trait list only contains <> [] () nesting).
        lb = text.find("{", m.end())
        if lb < 0:
            raise ValueError(f"{record}: no body")
        if text.startswith("[{", lb - 1):
            raise ValueError(f"{record}: unexpected code block in header")
        rb = match_close(text, lb, "{", "}")
        body = text[lb + 1:rb]
        op = OpSchema(record, mnem, vmin, vmax)

        args = dag_body(body, "arguments", "ins")
        for entry in split_top_level(args or ""):
            if ":$" not in entry:
                raise ValueError(f"{record}: unnamed argument {entry!r}")
            constraint, name = entry.rsplit(":$", 1)
            constraint = constraint.strip()
            name = name.strip()
            if _OPERAND_RE.match(constraint):
                continue
            if _OTHER_ATTR_RE.match(constraint):
                raise ValueError(
                    f"{record}: argument ${name} uses {constraint}; optional/"
                    f"defaulted attributes or properties have a different "
                    f"property encoding and are not supported by this table")
            if _REQUIRED_ATTR_RE.match(constraint):
                if not name.isascii():
                    raise ValueError(f"{record}: non-ASCII attr name {name!r}")
                op.attrs.append(name)
                continue
            raise ValueError(
                f"{record}: cannot classify argument {constraint}:${name}")
        if len(set(op.attrs)) != len(op.attrs):
            raise ValueError(f"{record}: duplicate attribute names")

        regs = dag_body(body, "regions", "region")
        if regs:
            entries = split_top_level(regs)
            if any(e.startswith("VariadicRegion<") for e in entries):
                if len(entries) != 1:
                    raise ValueError(f"{record}: mixed variadic regions")
                op.regions = -1
            else:
                op.regions = len(entries)
        ops.append(op)
    return ops


def parse_current_version(version_h: str) -> str:
    m = re.search(
        r"getCurrentVersion\s*\(\s*\)\s*\{\s*return\s+Version\s*\(\s*"
        r"(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)", version_h)
    if not m:
        raise ValueError("getCurrentVersion() not found in Version.h")
    return ".".join(m.groups())


def emit(ops: list[OpSchema], current: str | None, commit: str) -> str:
    n_slots = sum(len(o.attrs) for o in ops)
    lines = [
        "// GENERATED FILE - DO NOT EDIT.",
        "// Generated by tools/gen_vhlo_schemas.py from openxla/stablehlo",
        f"//   stablehlo/dialect/VhloOps.td @ {commit}",
        "// Regenerate with:",
        "//   git -C <stablehlo> show <commit>:stablehlo/dialect/VhloOps.td"
        " > /tmp/VhloOps.td",
        "//   git -C <stablehlo> show <commit>:stablehlo/dialect/Version.h"
        " > /tmp/Version.h",
        "//   python3 tools/gen_vhlo_schemas.py /tmp/VhloOps.td"
        " --version-h /tmp/Version.h",
        "//       --source-commit <commit> -o ingest/vhlo_op_schemas.inc",
        "//   (the last two lines are one command)",
        "//",
        f"// {len(ops)} ops, {n_slots} attribute slots.",
        "//",
        "// X-macro tables. Define the macro(s) you need, then #include.",
        "//",
        "//   KILN_VHLO_OP(vhlo_name, shlo_name, min_version, max_version,",
        "//                ATTRS, regions)",
        "//     vhlo_name    \"vhlo.<mnemonic>\", e.g. \"vhlo.dot_general_v2\"",
        "//     shlo_name    StableHLO-side op, e.g. \"stablehlo.add\",",
        "//                  \"func.func\", \"func.call\"; vhlo.return_v1 maps to",
        "//                  \"stablehlo.return\" (func.return inside func bodies:",
        "//                  the reader decides from the parent op)",
        "//     min_version  \"x.y.z\"",
        "//     max_version  \"x.y.z\" or \"current\"",
        "//     ATTRS        {\"a\", \"b\", ...} - inherent attribute names in",
        "//                  bytecode property order (byte-wise ascending); every",
        "//                  slot is one required attribute index (varint).",
        "//     regions      number of regions; -1 = variadic (case, composite)",
        "//",
        "//   The commas inside ATTRS split it into several macro arguments, so",
        "//   the macro MUST be variadic after the fourth parameter:",
        "//     #define KILN_VHLO_OP(vhlo, shlo, min, max, ...)"
        " {vhlo, shlo, min, max, __VA_ARGS__},",
        "//   __VA_ARGS__ is then `{\"a\", \"b\", ...}, regions`, the tail of an",
        "//   aggregate initializer for e.g.",
        "//     struct { const char *vhlo, *shlo, *min, *max;",
        "//              std::initializer_list<const char*> attrs; int regions; };",
        "//   Use plain braces (not `Type{...}`): with a typed temporary, clang 14",
        "//   does not extend the initializer_list backing array's lifetime.",
        "//",
        "//   KILN_VHLO_VERSION_CURRENT(version)   e.g. \"1.20.0\"",
        "",
        "#ifndef KILN_VHLO_OP",
        "#define KILN_VHLO_OP(...)",
        "#define KILN_VHLO_OP_UNDEF_",
        "#endif",
        "#ifndef KILN_VHLO_VERSION_CURRENT",
        "#define KILN_VHLO_VERSION_CURRENT(...)",
        "#define KILN_VHLO_VERSION_CURRENT_UNDEF_",
        "#endif",
        "",
    ]
    for o in ops:
        attrs = "{" + ", ".join(f'"{a}"' for a in o.sorted_attrs) + "}"
        lines.append(
            f'KILN_VHLO_OP("{o.vhlo_name}", "{o.shlo_name}", '
            f'"{o.min_version}", "{o.max_version}", {attrs}, {o.regions})')
    lines.append("")
    if current is not None:
        lines.append(f'KILN_VHLO_VERSION_CURRENT("{current}")')
        lines.append("")
    lines += [
        "#ifdef KILN_VHLO_OP_UNDEF_",
        "#undef KILN_VHLO_OP",
        "#undef KILN_VHLO_OP_UNDEF_",
        "#endif",
        "#ifdef KILN_VHLO_VERSION_CURRENT_UNDEF_",
        "#undef KILN_VHLO_VERSION_CURRENT",
        "#undef KILN_VHLO_VERSION_CURRENT_UNDEF_",
        "#endif",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vhlo_ops_td", help="path to stablehlo VhloOps.td")
    ap.add_argument("--version-h", help="path to stablehlo Version.h "
                    "(for KILN_VHLO_VERSION_CURRENT)")
    ap.add_argument("--current-version", help="override current version")
    ap.add_argument("--source-commit", default="<unknown commit>",
                    help="stablehlo commit the inputs came from")
    ap.add_argument("-o", "--output", default="-", help="output .inc path")
    args = ap.parse_args(argv)

    with open(args.vhlo_ops_td, encoding="utf-8") as f:
        ops = parse_ops(f.read())
    if not ops:
        print("error: no VHLO_Op records found", file=sys.stderr)
        return 1
    names = [o.vhlo_name for o in ops]
    if len(set(names)) != len(names):
        print("error: duplicate op names", file=sys.stderr)
        return 1

    current = args.current_version
    if current is None and args.version_h:
        with open(args.version_h, encoding="utf-8") as f:
            current = parse_current_version(f.read())

    text = emit(ops, current, args.source_commit)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    n_slots = sum(len(o.attrs) for o in ops)
    print(f"{len(ops)} ops, {n_slots} attribute slots, current version "
          f"{current}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
