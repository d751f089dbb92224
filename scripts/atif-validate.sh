#!/usr/bin/env bash
# Validates ATIF trajectories (`rein batch`'s trajectory.atif.json) with the ATIF models of
# Harbor itself: the `harbor` wheel from PyPI supplies `harbor.models.trajectories` (pydantic
# models with Harbor's own validators). Harbor as a whole needs Python >= 3.12; only its
# trajectory models are loaded, which run on older Pythons too.
#
#   bash scripts/atif-validate.sh OUT/*/trajectory.atif.json
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: atif-validate.sh FILE..." >&2; exit 2; }
harbor_version="0.25.0"
venv="${REIN_ATIF_VENV:-${TMPDIR:-/tmp}/rein-atif-validate}"
if [ ! -d "$venv/harbor-wheel/harbor/models/trajectories" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "pydantic>=2,<3"
  "$venv/bin/pip" download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    "harbor==$harbor_version" -d "$venv/download"
  "$venv/bin/python" -m zipfile -e "$venv/download/harbor-$harbor_version-py3-none-any.whl" \
    "$venv/harbor-wheel"
fi
exec "$venv/bin/python" "$(dirname "$0")/../integrations/harbor/validate_atif.py" "$venv/harbor-wheel" "$@"
