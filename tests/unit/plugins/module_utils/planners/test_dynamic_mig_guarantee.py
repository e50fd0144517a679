# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dynamic MIG quota guarantee against a brute force that shares nothing with the planner.

Kueue charges a claim the ``memory`` counter of its profile and admits any mix whose charges fit
the quota; the planner's quota must be such that every such mix of the workloads' profiles has a
placement on the GPUs, and be the largest such (the next dearer mix being one that no GPU set
holds). The brute force (tests/unit/mig_grid_oracle.py) places instances directly on the
memory-slice grid, each at a start of its profile, no two overlapping, GPU by GPU, from tables
typed from NVIDIA's MIG User Guide and NVML's memorySizeMB.
"""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planners import dynamic_mig

from mig_grid_oracle import H200, brute_force, places

CASES = [(profiles, gpus) for size in (1, 2, 3) for profiles in itertools.combinations(sorted(H200), size)
         for gpus in (1, 2)] + [(("1g.18gb", "2g.35gb", "3g.71gb"), 3), (("1g.35gb", "3g.71gb"), 3)]


@pytest.mark.parametrize("profiles,gpus", CASES, ids=["%s-x%d" % ("+".join(p), g) for p, g in CASES])
def test_quota_is_the_largest_under_which_every_mix_places(profiles, gpus):
    planned = dynamic_mig.guarantee("h200-141gb", profiles, gpus)
    quota, unplaceable = brute_force(profiles, gpus)
    assert planned.exact
    assert planned.quota_mib == quota
    assert planned.witness_mib == unplaceable
    witness = tuple(sorted(planned.witness))
    assert not places(witness, gpus)
    assert sum(n * H200[p][2] for p, n in witness) == unplaceable


def test_eight_small_slices_on_one_h200_are_the_mix_kueue_alone_would_strand():
    """By hand: seven 1g.18gb starts (0-6), so an eighth 1g.18gb never places, although its 8 x
    16384 MiB is below the GPU's 143360 MiB counter; 7 x 16384 is the quota."""
    g = dynamic_mig.guarantee("h200-141gb", ("1g.18gb",), 1)
    assert (g.quota_mib, g.witness, g.witness_mib, g.capacity_mib) == (7 * 16384, (("1g.18gb", 8),), 8 * 16384, 143360)


def test_the_first_fit_bound_used_for_large_fleets_is_safe():
    """Past the state limit the quota is a first-fit bound: never above the exact quota, and
    every mix under it places (brute force)."""
    for profiles, gpus in [(("1g.18gb", "3g.71gb"), 2), (("1g.35gb", "2g.35gb"), 2), (("1g.18gb",), 2)]:
        bound = dynamic_mig.guarantee("h200-141gb", profiles, gpus, max_states=1)
        exact, _unplaceable = brute_force(profiles, gpus)
        assert not bound.exact and 0 < bound.quota_mib <= exact
        bounds = [bound.quota_mib // H200[p][2] for p in profiles]
        for counts in itertools.product(*(range(b + 1) for b in bounds)):
            if sum(n * H200[p][2] for p, n in zip(profiles, counts)) <= bound.quota_mib:
                assert places(tuple((p, n) for p, n in zip(profiles, counts) if n), gpus), counts
