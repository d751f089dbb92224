"""Validates ATIF files with Harbor's own trajectory models.

Usage: validate_atif.py HARBOR_SOURCE_DIR FILE...

HARBOR_SOURCE_DIR holds the unpacked `harbor` wheel. Only `harbor.models.trajectories` is
imported (through namespace stubs for its parent packages), so the rest of Harbor and its
dependencies are not needed. Exits 1 naming the first file that does not validate.
"""

import json
import pathlib
import sys
import types


def load_trajectory_model(root: pathlib.Path):
    for name, path in (("harbor", root / "harbor"), ("harbor.models", root / "harbor" / "models")):
        stub = types.ModuleType(name)
        stub.__path__ = [str(path)]
        sys.modules[name] = stub
    from harbor.models.trajectories import Trajectory

    return Trajectory


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    trajectory = load_trajectory_model(pathlib.Path(sys.argv[1]))
    for name in sys.argv[2:]:
        with open(name, encoding="utf-8") as file:
            data = json.load(file)
        try:
            trajectory.model_validate(data)
        except Exception as error:  # pydantic's ValidationError, reported whole
            print(f"{name}: not valid ATIF:\n{error}", file=sys.stderr)
            return 1
        print(f"{name}: valid {data.get('schema_version')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
