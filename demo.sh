#!/usr/bin/env bash
# Quick start, part 1: installs what is needed (Debian packages, .venv/, Kiln), then trains a small
# MLP with JAX on the built-in CPU backend and on Kiln and compares the two.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
scripts/setup.sh
exec .venv/bin/python examples/train_mlp.py "$@"
