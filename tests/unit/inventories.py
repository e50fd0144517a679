"""Reading the example inventories the way Ansible lays them out, for the unit tests."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "inventory-examples"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())


def load_example(name: str) -> dict:
    """The example inventory inventory-examples/NAME (see load_dir)."""
    return load_dir(EXAMPLES / name)


def load_dir(base: Path) -> dict:
    """group_vars/all/*.yml merged, plus gpushare_nodes from host_vars of gpushare_gpu_nodes,
    of the inventory directory BASE (laid out like inventory-examples/*)."""
    base = Path(base)
    variables: dict = {}
    for f in sorted((base / "group_vars" / "all").glob("*.yml")):
        variables.update(yaml.safe_load(f.read_text()) or {})
    hosts = yaml.safe_load((base / "hosts.yml").read_text())["all"]["children"]["gpushare_gpu_nodes"]["hosts"]
    variables["gpushare_nodes"] = {
        host: yaml.safe_load((base / "host_vars" / ("%s.yml" % host)).read_text())["gpushare_node"] for host in hosts}
    return variables


def example_day() -> dict:
    return copy.deepcopy(load_example("four-gpu-server"))


def example_mig_configs(plan: dict) -> tuple[str, str]:
    """gpu01's MIG config names by day and at night in the example day's ``plan`` (named by
    their layouts, so read from the plan)."""
    night = next(w for w in plan["windows"] if w["name"] == "night")
    return plan["nodes"][0]["mig_config"]["name"], night["nodes"][0]["mig_config"]["name"]


MULTIKUEUE_EXAMPLES = ROOT / "multikueue-examples"


def load_clusters(name: str = "two-sites") -> tuple[dict, dict]:
    """multikueue-examples/NAME as Ansible reads it: (group_vars/all merged, with
    gpushare_nodes of every host, and the groups: group name -> host names). Worker groups
    have no group_vars of their own in the examples, so every worker sees group_vars/all."""
    base = MULTIKUEUE_EXAMPLES / name
    variables: dict = {}
    for f in sorted((base / "group_vars" / "all").glob("*.yml")):
        variables.update(yaml.safe_load(f.read_text()) or {})
    children = yaml.safe_load((base / "hosts.yml").read_text())["all"]["children"]
    groups = {group: sorted((body or {}).get("hosts") or {}) for group, body in children.items()}
    variables["gpushare_nodes"] = {
        host: yaml.safe_load((base / "host_vars" / ("%s.yml" % host)).read_text())["gpushare_node"]
        for hosts in groups.values() for host in hosts}
    return variables, groups
