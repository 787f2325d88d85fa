#!/usr/bin/env python3
"""Prints the polynomial coefficients of Kiln's f32 tanh (codegen/native_math.cc, EmitTanh; its expm1 polynomial is also exp's).

Two near-minimax fits, by weighted least squares on Chebyshev nodes iterated toward minimax
(Lawson's algorithm), in f64:
  * Q of degree 4 with tanh(a) = a + a^3 Q(a^2) on 0 <= a <= 0.5493 (tanh(a) <= 1/2), error
    relative to tanh(a);
  * P of degree 5 with expm1(r) = r + r^2 P(r) on |r| <= ln2/2, error relative to expm1(r).
Run with the project's virtualenv: .venv/bin/python tools/tanh_coefficients.py
"""
import math

import numpy as np


def fit(f, lo, hi, degree, weight, nodes=4000, rounds=200):
    t = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    x = (lo + hi) / 2 + (hi - lo) / 2 * t
    basis = np.vstack([x**i for i in range(degree + 1)]).T
    y, w = f(x), weight(x)
    lawson = np.ones(nodes)
    for _ in range(rounds):
        s = w * np.sqrt(lawson)
        c = np.linalg.lstsq(basis * s[:, None], y * s, rcond=None)[0]
        err = np.abs((basis @ c - y) * w)
        lawson = lawson * err
        lawson /= lawson.sum()
    return c, float(np.max(np.abs((basis @ c - y) * w)))


def main():
    half = 0.5493  # tanh(0.5493) ~ 1/2: the threshold between the two branches
    q, q_err = fit(lambda s: (np.tanh(np.sqrt(s)) / np.sqrt(s) - 1) / s, 1e-12, half * half, 4,
                   lambda s: s * np.sqrt(s) / np.tanh(np.sqrt(s)))
    bound = math.log(2) / 2
    p, p_err = fit(lambda r: (np.expm1(r) - r) / (r * r), -bound, bound, 5,
                   lambda r: r * r / np.expm1(r))
    print(f"Q (a^3 Q(a^2), relative error {q_err:.3g}):", ", ".join(repr(float(v)) for v in q))
    print(f"P (r^2 P(r), relative error {p_err:.3g}):", ", ".join(repr(float(v)) for v in p))


if __name__ == "__main__":
    main()
