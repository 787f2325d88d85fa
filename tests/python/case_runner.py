"""Runs a cases file's cases in this (fresh) process and prints one JSON object: case name ->
{"ok", "detail"}. multidevice_cases.py, gspmd_cases.py and sharding_propagation_cases.py end with
it; their test files start them with the device counts they need and read the JSON back."""

from __future__ import annotations

import json
import sys
import traceback
from typing import Callable, Mapping


def run_cases(cases: Mapping[str, Callable[[], None]]) -> None:
    """Runs the cases named on the command line (all of them without names)."""
    results = {}
    only = sys.argv[1:]
    for name, fn in cases.items():
        if only and name not in only:
            continue
        try:
            fn()
            results[name] = {"ok": True, "detail": ""}
        except Exception as e:  # reported per case
            results[name] = {"ok": False, "detail": f"{type(e).__name__}: {e}\n"
                             + "".join(traceback.format_exc(limit=-3))}
    print(json.dumps(results))
