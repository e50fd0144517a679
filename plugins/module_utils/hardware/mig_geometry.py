# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Placement arithmetic on one GPU's MIG grid.

A multiset of profiles is valid on a GPU if and only if every instance can be given a
start from its profile's start list with no two [start, start+size) intervals
overlapping, each profile's max count holds, and at most one media-extension profile is
present (NVML nvmlDeviceGetGpuInstancePossiblePlacements_v2: "Creation of new GPU instance
will fail if there is overlap with the already occupied memory slices"; MIG User Guide: "A
single 1g profile can include media extensions"). Counting slices is not enough: on the
8-unit grid two 3g profiles fit (starts 0 and 4) but a 3g at 4 blocks 1g starts 4, 5 and 6.

mig-parted chooses placements itself (it retries creation orders), so the planner only
needs to prove that one placement exists; ``place`` returns that proof.
"""

from __future__ import annotations

from functools import lru_cache

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG, GpuModel


def place(model: GpuModel, counts: dict[str, int]) -> list[tuple[str, int]] | None:
    """A non-overlapping placement [(profile, start)] for ``counts``, or None if none exists."""
    key = tuple(sorted((name, n) for name, n in counts.items() if n))
    return _place(model.key, key)


def feasible(model: GpuModel, counts: dict[str, int]) -> bool:
    return place(model, counts) is not None


@lru_cache(maxsize=65536)
def _place(model_key: str, counts: tuple[tuple[str, int], ...]) -> list[tuple[str, int]] | None:
    model = CATALOG[model_key]
    profiles = []
    media = 0
    for name, n in counts:
        profile = model.profile(name)
        if n > profile.max_count:
            return None
        media += n if profile.media_extensions else 0
        profiles += [profile] * n
    if media > 1:
        return None
    # Largest first with fewest start options first: fails fast on impossible sets.
    profiles.sort(key=lambda p: (-p.size, len(p.starts), p.name))
    if sum(p.size for p in profiles) > model.mig_grid:
        return None
    chosen: list[tuple[str, int]] = []

    def search(i: int, used: int, last_start: int) -> bool:
        if i == len(profiles):
            return True
        p = profiles[i]
        # Identical profiles are interchangeable: take starts in increasing order only.
        same_as_previous = i > 0 and profiles[i - 1].name == p.name
        for start in p.starts:
            if same_as_previous and start <= last_start:
                continue
            mask = ((1 << p.size) - 1) << start
            if start + p.size <= model.mig_grid and not used & mask:
                chosen.append((p.name, start))
                if search(i + 1, used | mask, start):
                    return True
                chosen.pop()
        return False

    return sorted(chosen, key=lambda c: c[1]) if search(0, 0, -1) else None


@lru_cache(maxsize=256)
def patterns(model_key: str, allowed: tuple[str, ...]) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Every non-empty placement-feasible multiset of the ``allowed`` profiles on one GPU."""
    model = CATALOG[model_key]
    names = sorted(allowed)
    found = []

    def grow(i: int, counts: dict[str, int]) -> None:
        if i == len(names):
            if any(counts.values()):
                found.append(tuple(sorted((k, v) for k, v in counts.items() if v)))
            return
        name = names[i]
        n = 0
        while True:
            counts[name] = n
            if n and not feasible(model, counts):
                break
            grow(i + 1, counts)
            n += 1
        counts[name] = 0

    grow(0, {})
    return tuple(found)


def carve(model: GpuModel, counts: dict[str, int], candidates: list[str]) -> dict[str, int]:
    """Fill what ``counts`` leaves free with the largest useful profiles that still fit."""
    result = dict(counts)
    by_size = sorted(candidates, key=lambda n: (-model.profile(n).size, -model.profile(n).compute_slices,
                                                -model.profile(n).memory_mib, n))
    progress = True
    while progress:
        progress = False
        for name in by_size:
            trial = dict(result)
            trial[name] = trial.get(name, 0) + 1
            if feasible(model, trial):
                result = trial
                progress = True
                break
    return result
