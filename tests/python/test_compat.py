"""kiln.initialize()'s jaxlib range warning (python/kiln/_compat.py)."""

from __future__ import annotations

from kiln import _compat


def test_inside_the_range_is_silent():
    low, high = _compat.SUPPORTED_JAXLIB
    for v in (low, high):
        assert _compat.jaxlib_warning(".".join(map(str, v))) is None
    assert _compat.jaxlib_warning("0.6.2") is None


def test_outside_the_range_names_both():
    for installed in ("0.4.30", "0.11.0", "1.0.0"):
        msg = _compat.jaxlib_warning(installed)
        assert msg is not None and installed in msg
        assert "0.4.38" in msg and "0.10.2" in msg
        assert "\n" not in msg


def test_unparseable_or_missing_is_silent():
    assert _compat.jaxlib_warning("dev") is None


def test_installed_jaxlib_is_supported():
    # The suite runs on a supported jaxlib: initialize() must not have warned.
    assert _compat.jaxlib_warning() is None
