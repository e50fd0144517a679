#!/usr/bin/env python
"""Fail when a role's meta/argument_specs.yml (entry point main) and defaults/main.yml
do not name exactly the same variables (the prometheus.prometheus convention)."""
import sys
from pathlib import Path

import yaml


def keys(path: Path) -> set[str]:
    data = yaml.safe_load(path.read_text()) or {}
    return set(data)


def main(roles: list[str]) -> int:
    bad = 0
    for role in roles:
        root = Path(role)
        defaults = keys(root / "defaults" / "main.yml")
        spec = yaml.safe_load((root / "meta" / "argument_specs.yml").read_text())
        options = set(spec["argument_specs"]["main"].get("options", {}))
        for name in sorted(defaults - options):
            print(f"{root}: {name} is in defaults/main.yml but not in meta/argument_specs.yml")
            bad += 1
        for name in sorted(options - defaults):
            print(f"{root}: {name} is in meta/argument_specs.yml but not in defaults/main.yml")
            bad += 1
        for name in sorted(defaults | options):
            if not name.startswith(root.name + "_"):
                print(f"{root}: {name} lacks the role prefix {root.name}_")
                bad += 1
    if not bad:
        print(f"argument specs match defaults: {', '.join(roles)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
