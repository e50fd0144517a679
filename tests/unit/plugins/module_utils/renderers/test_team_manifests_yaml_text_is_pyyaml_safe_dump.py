# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The team manifests' YAML (render_teams writes it itself, issue 37: PyYAML's representer
cost 20 s for 20,000 manifests) is, character for character, what PyYAML's pure-Python
SafeDumper writes with the options render_teams used before
(``yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False)``): for every
manifest of every example inventory, and for brute-force documents of the shapes it writes
(nested mappings, sequences of mappings, empty ones, ints, booleans, nulls) whose strings are
the ones YAML reads back as something else when plain ('true', 'on', '~', '08:00', '1_000',
'0x1F', '1.0e+3', 'a:', '-', '@a', '---x') and long keys. Anything else (a float, a string
with a space or a quote, a list in a list) goes to PyYAML itself, and is checked the same way."""

# pylint: disable=protected-access  # the direct YAML path and its fallback, checked apart
from __future__ import annotations

import random

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.workload_requests import pod_requests
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_teams
from inventories import EXAMPLE_NAMES, load_example

# Strings PyYAML quotes (YAML 1.1 booleans, nulls, numbers, times, indicators) and plain ones
# that look close to them.
STRINGS = ["a", "true", "True", "TRUE", "yes", "Yes", "no", "on", "off", "y", "n", "Y", "null", "Null",
           "1", "012", "0x1F", "0o7", "0b101", "1_000", "+1", "-1", "1.0", ".5", "1.0e+3", "1e3", ".nan", ".inf", "NaN",
           "08:00", "1:30", "190:20:30", "2026-12-05", "2026-12-05T09:00:00Z", "a:", ":a", "a:b", "-", "-a", "a-", "=",
           "@a", "a@b", "---x", "...x", "a.", ".a", "nvidia.com/gpu", "app.kubernetes.io/name",
           "registry.example.com/research/svc-0001:latest", "kueue.x-k8s.io/queue-name", "ALL", "RuntimeDefault",
           "x" * 99, "x" * 100]
# Outside what render_teams writes itself: PyYAML writes the documents that hold one (a key
# over 106 characters is no simple key to PyYAML: '? key').
ODD = ["~", "x" * 101, "k" * 107, "k" * 130, "a b", "", "it's", "#a", "a#b", "é", "line\nbreak", 1.5]
SCALARS = STRINGS + [0, 7, -3, 10 ** 20, True, False, None]


def string(rng: random.Random):
    return rng.choice(ODD) if rng.random() < 0.02 else rng.choice(STRINGS)


def reference(documents) -> str:
    """PyYAML's pure-Python SafeDumper, as render_teams called it before issue 37."""
    return yaml.dump_all(documents, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False)


def document(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth and (depth > 3 or roll < 0.35):
        return string(rng) if roll < 0.25 else rng.choice(SCALARS)
    if depth and roll < 0.55:
        # A list in a list is rare, as in manifests (PyYAML writes those documents).
        return [document(rng, depth + 1) if rng.random() < 0.9 else [] for _item in range(rng.randint(0, 3))]
    return {string(rng): document(rng, depth + 1) for _key in range(rng.randint(0 if depth else 1, 4))}


@pytest.mark.parametrize("seed", range(8))
def test_brute_force_documents_are_written_as_pyyaml_writes_them(seed):
    rng = random.Random(seed)
    for _case in range(500):
        documents = [document(rng) for _document in range(rng.randint(1, 3))]
        assert render_teams._dump_all(documents) == reference(documents), documents


def test_the_brute_force_documents_mostly_take_the_direct_path():
    # Else the test above would check PyYAML against itself.
    rng = random.Random(0)
    direct = 0
    for _case in range(2000):
        documents = [document(rng) for _document in range(rng.randint(1, 3))]
        try:
            render_teams._block_yaml(documents)
            direct += 1
        except render_teams._NotBlockYaml:
            pass
    assert direct > 900, direct


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_manifest_is_what_pyyaml_writes(name):
    plan = build_plan(load_example(name))
    requests = pod_requests(plan)
    for w in plan["workloads"]:
        objects = render_teams.workload_objects(plan, w["name"], requests[w["name"]])
        written = render_teams._block_yaml(objects)      # the direct path, not PyYAML's fallback
        assert written == reference(objects), w["name"]
