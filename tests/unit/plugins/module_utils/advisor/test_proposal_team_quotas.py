# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Team quotas from the GPUs a team uses at once, worked out by hand (proposal._team_in_use: a
device is in use at a step when it reports memory or activity there, counted once however many
of the team's pods report it, at its share of the placement grid), and the example day's teams.
"""

from __future__ import annotations

from types import SimpleNamespace

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage import _np


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


# --------------------------------------------------------------------------- team quotas

def test_team_quotas_from_gpus_in_use_at_once():
    import numpy as np
    nan = float("nan")

    def device(mem, fraction):
        return SimpleNamespace(mem=np.array(mem), act=np.full(len(mem), nan), unit_fraction=fraction)
    # Team a: a 3g slice (3/7 of the card) in use at steps 0-2, a whole GPU at step 1: 3/7, 10/7, 3/7, 0.
    services = {("ns-a", "svc"): SimpleNamespace(devices={("n", 0, "3g"): device([1.0, 1.0, 1.0, nan], 3 / 7),
                                                          ("n", 1): device([nan, 1.0, nan, nan], 1.0)})}
    ctx = SimpleNamespace(
        settings=SimpleNamespace(quota_percentile=50, idle_hour_percentile=90),
        inventory=SimpleNamespace(teams=[SimpleNamespace(name="a"), SimpleNamespace(name="b")],
                                  nodes=[SimpleNamespace(gpus=[SimpleNamespace(team="a"), SimpleNamespace(team="a"),
                                                               SimpleNamespace(team=None)])]),
        team_of_ns={"ns-a": "a"}, usage=SimpleNamespace(steps=4), hours=np.array([0, 0, 1, 2]))
    # Median of 0, 3/7, 3/7, 10/7: 3/7 = 0.43, a quota of 1; peak 10/7 = 1.43; mean (9/7 + 1) / 4 = 0.57.
    # Idle hours (90th percentile 0): a only at 02:00; b, with nothing, at every hour with a sample.
    assert proposal.team_quotas(ctx, services, slice(0, 4)) == [
        {"team": "a", "gpus_in_use_p": 0.43, "percentile": 50, "gpus_in_use_max": 1.43, "gpus_in_use_mean": 0.57,
         "quota_proposed": 1, "gpus_owned_now": 2, "idle_hours": [2]},
        {"team": "b", "gpus_in_use_p": 0.0, "percentile": 50, "gpus_in_use_max": 0.0, "gpus_in_use_mean": 0.0,
         "quota_proposed": 0, "gpus_owned_now": 0, "idle_hours": [0, 1, 2]}]
    # An empty window: nothing in use, no idle hour.
    assert [(q["gpus_in_use_p"], q["gpus_in_use_max"], q["gpus_in_use_mean"], q["idle_hours"])
            for q in proposal.team_quotas(ctx, services, slice(0, 0))] == [(0.0, 0.0, 0.0, [])] * 2
