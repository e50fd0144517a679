# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUs a team uses at once, worked out by hand for four samples (proposal._team_in_use: a
device is in use at a step when it reports memory or activity there, counted once however
many of the team's pods report it, at its share of the placement grid). Kills proposal.py
mutants that survived `make mutation` (docs/testing.md, "Mutation testing")."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal
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
