# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proposal's arithmetic worked out by hand: GPUs a team uses at once for four samples
(proposal._team_in_use: a device is in use at a step when it reports memory or activity
there, counted once however many of the team's pods report it, at its share of the placement
grid), the example day's teams, idle runs on a circular day, cards per replica, a DRA entry.
Kills proposal.py mutants that survived `make mutation` (docs/testing.md, "Mutation
testing")."""

from __future__ import annotations

from types import SimpleNamespace

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage import _np
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog

NAN = float("nan")


def _device(mem, act, fraction):
    np = _np()
    return SimpleNamespace(mem=np.array(mem), act=np.array(act), unit_fraction=fraction)


def test_a_team_uses_each_device_once_at_its_share_of_the_card():
    whole, slice_3g = ("n1", 0, None), ("n1", 1, "3g.71gb")        # a whole H200, and 4 of 8 memory slices
    services = {
        ("team-a", "chat"): SimpleNamespace(devices={
            whole: _device([1.0, NAN, 1.0, NAN], [NAN, NAN, 0.5, NAN], 1.0),
            slice_3g: _device([NAN, 1.0, 1.0, NAN], [NAN, NAN, NAN, NAN], 0.5)}),
        # a second pod of the team on the same whole card, at step 3 only: the card counts once
        ("team-a", "batch"): SimpleNamespace(devices={whole: _device([NAN, NAN, 1.0, 1.0], [NAN, NAN, NAN, 0.2], 1.0)}),
        ("team-b", "other"): SimpleNamespace(devices={("n1", 2, None): _device([1.0] * 4, [1.0] * 4, 1.0)}),
    }
    ctx = SimpleNamespace(team_of_ns={"team-a": "a", "team-b": "b"}, usage=SimpleNamespace(steps=4))
    in_use = proposal._team_in_use(ctx, services, slice(0, 4), "a")
    # step 0: whole; 1: the slice; 2: whole + slice; 3: whole (the second pod).
    assert list(in_use) == [1.0, 0.5, 1.5, 1.0]
    assert list(proposal._team_in_use(ctx, services, slice(1, 3), "a")) == [0.5, 1.5]


def test_a_circular_day_has_its_longest_idle_run_first():
    hours = [h in (0, 1, 2, 10, 11, 12, 20, 21, 22, 23) for h in range(24)]
    # 20:00 to 03:00 runs over midnight: 7 hours, before 10:00-13:00 (3).
    assert proposal._circular_runs(hours) == [(20, 7), (10, 3)]
    # Equal lengths: the earlier start first.
    assert proposal._circular_runs([h in (15, 5) for h in range(24)]) == [(5, 1), (15, 1)]


def test_a_replica_needs_the_cards_of_its_memory_and_of_its_compute():
    h200 = gpu_catalog.CATALOG["h200-141gb"]
    # A whole GPU's compute exactly (1.0) is one card, not two; 200000 MiB needs ceil(200000 / 143771) = 2.
    assert proposal._cards_per_replica({"memory_need_mib": 1000, "compute_need": 1.0}, h200) == 1
    assert proposal._cards_per_replica({"memory_need_mib": 200000, "compute_need": 0.5}, h200) == 2
    assert proposal._cards_per_replica({"memory_need_mib": 1000, "compute_need": 2.0}, h200) == 2


def test_a_dra_service_becomes_a_device_request_for_its_memory():
    advised = {"name": "chat", "team": "production", "kind": "serving", "sharing": "dra", "memory_gib": 20,
               "replicas": 1, "gpus": 1}
    assert proposal._workload_entry(advised) == {"name": "chat", "team": "production", "kind": "serving",
                                                 "device_request": {"min_memory_gib": 20}}


def test_the_example_days_teams_idle_hours_and_quotas():
    """usage_synth's example day: production holds vLLM's whole GPU and 4 of 8 MIG slices all day (1.5 GPUs,
    never idle); data-science's notebooks are up 07:00-19:00; training's fine-tune runs 19:30-06:30 on two
    GPUs. An hour is idle when its 95th percentile is idle; the quota is the 90th percentile rounded up.
    GPUs owned now: gpu01.yml gives GPUs 0 and 1 to production, 2 to data-science, 3 to training."""
    teams = {t["team"]: t for t in ua.advise(usage_synth.example_day(days=14), example_inventory(), check=False)["teams"]}
    assert teams["production"]["idle_hours"] == []
    assert teams["data-science"]["idle_hours"] == list(range(0, 7)) + list(range(19, 24))
    assert teams["training"]["idle_hours"] == list(range(7, 19))
    assert {name: (t["quota_proposed"], t["percentile"], t["gpus_owned_now"]) for name, t in teams.items()} == \
        {"production": (2, 90.0, 2), "data-science": (1, 90.0, 1), "training": (2, 90.0, 1)}
