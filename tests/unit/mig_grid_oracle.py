# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG placement on the H200's memory-slice grid, written from NVIDIA's tables alone (shares
nothing with the collection), for the dynamic MIG tests: the H200 rows of the MIG User Guide's
"Supported MIG Profiles" (instances and placements per profile) and the ``memory`` counter the
DRA driver publishes for each, NVML's GPU instance profile memorySizeMB on an H200."""

from __future__ import annotations

import itertools
from functools import lru_cache

# profile: (memory slices, starts, NVML memorySizeMB)
H200 = {
    "1g.18gb": (1, (0, 1, 2, 3, 4, 5, 6), 16384),
    "1g.35gb": (2, (0, 2, 4, 6), 33280),
    "2g.35gb": (2, (0, 2, 4), 33280),
    "3g.71gb": (4, (0, 4), 71424),
    "4g.71gb": (4, (0,), 71424),
    "7g.141gb": (8, (0,), 143360),
}
SLICES = 8


@lru_cache(maxsize=None)
def places(counts: tuple[tuple[str, int], ...], gpus: int) -> bool:
    """Whether instances ``counts`` (profile, n) fit ``gpus`` GPUs: try every start on every GPU."""
    instances = sorted((p for p, n in counts for _copy in range(n)), key=lambda p: -H200[p][0])

    @lru_cache(maxsize=None)
    def fill(i: int, masks: tuple[int, ...]) -> bool:
        if i == len(instances):
            return True
        size, starts, _mib = H200[instances[i]]
        tried = set()
        for g, mask in enumerate(masks):
            if mask in tried:           # GPUs with the same slices taken are interchangeable
                continue
            tried.add(mask)
            for s in starts:
                bits = ((1 << size) - 1) << s
                if s + size <= SLICES and not mask & bits:
                    if fill(i + 1, tuple(sorted(masks[:g] + (mask | bits,) + masks[g + 1:]))):
                        return True
        return False

    return fill(0, (0,) * gpus)


def brute_force(profiles: tuple[str, ...], gpus: int) -> tuple[int, int]:
    """(dearest placeable charge below the cheapest unplaceable mix, that cheapest charge):
    every mix up to one instance more than the GPUs' memory holds, cheapest first, until the
    first that does not place."""
    limit = gpus * 143360 + max(H200[p][2] for p in profiles)
    bounds = [limit // H200[p][2] for p in profiles]
    mixes = sorted((sum(n * H200[p][2] for p, n in zip(profiles, counts)), counts)
                   for counts in itertools.product(*(range(b + 1) for b in bounds)))
    dearest = 0
    for cost, counts in mixes:
        if not places(tuple((p, n) for p, n in zip(profiles, counts) if n), gpus):
            assert cost <= limit                    # one instance more than the grid holds is in range
            return max(c for c, v in mixes if c < cost and places(
                tuple((p, n) for p, n in zip(profiles, v) if n), gpus)), cost
        dearest = cost
    raise AssertionError("every mix up to %d MiB places (dearest %d)" % (limit, dearest))
