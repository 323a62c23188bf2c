#!/bin/sh
# Build Meta's Rebalancer in a venv of its own, bench/peers/.venv-rebalancer (gitignored).
# Rebalancer needs Python >= 3.12; trimtab never depends on it. Idempotent.
#
#   bench/peers/setup_rebalancer.sh            # uses python3.12 from PATH (or $PYTHON312)
#   PYTHON312=/root/.pyenv/versions/3.12.1/bin/python3.12 bench/peers/setup_rebalancer.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv-rebalancer"
version=1.0.4
python=${PYTHON312:-python3.12}
if ! "$python" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
    echo "error: no Python >= 3.12 at '$python': set PYTHON312 to one (Rebalancer needs it)" >&2
    exit 2
fi
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import rebalancer, sys; sys.exit(rebalancer.__version__ != '$version')" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet "rebalancer==$version" "highspy==1.16.0"
fi
"$venv/bin/python" -c 'import rebalancer; print("rebalancer", rebalancer.__version__, "in", rebalancer.__file__)'
