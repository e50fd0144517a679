# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor's rules, as ordered, named lists: the first rule whose condition holds decides.

``KIND_RULES`` give a service its kind from the features of its pattern (``detect_kind``);
``RULES`` give it its sharing from its kind, its memory and compute needs and the card it ran
on (``choose``), and the result names the rule (``rule``). Every threshold is a field of
``Settings``; each rule names the fields it reads, and docs/advisor.md ("Rules") lists them
in this order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import DRA, MIG, MPS, TIMESLICE, WHOLE
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import MIB_PER_GIB, Settings
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.features import _percentile, compute_slices_of
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import calibration as calibration_file
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage import METRIC_MEMORY

# The replicas the inventory accepts on a shared GPU (inventory/model.py: 2..64).
MIN_SHARED_REPLICAS, MAX_SHARED_REPLICAS = 2, 64


def choose_profile(card: gpu_catalog.GpuModel, memory_mib: float, compute: float) -> gpu_catalog.MigProfile | None:
    """The smallest base MIG profile of ``card`` that holds ``memory_mib`` and ``compute``
    (whole-GPU terms, 0..1): fewest placement units, then fewest compute slices, then least
    memory. None when no profile holds both (or the card has no MIG)."""
    if not card.mig_capable:
        return None
    slices = compute_slices_of(card)
    fitting = [p for p in card.base_profiles
               if p.memory_mib >= memory_mib and p.compute_slices / slices >= compute - 1e-9]
    return min(fitting, key=lambda p: (p.size, p.compute_slices, p.memory_mib, p.name), default=None)


# --------------------------------------------------------------------------- kinds


@dataclass(frozen=True)
class KindRule:
    name: str                                       # the kind it gives
    applies: Callable[[dict, Settings], bool]       # (features, settings) -> whether the service is of this kind
    why: Callable[[dict], str]                      # features -> the evidence, in words
    settings: tuple = ()                            # the Settings fields its condition reads


def _is_notebook(f: dict, s: Settings) -> bool:
    return (f["idle_share"] >= s.notebook_idle_share and f["idle_memory_mib"] >= s.notebook_idle_memory_mib
            and f["active_share"] >= s.notebook_active_share and f["day_concentration"] >= s.notebook_day_concentration)


def _notebook_why(f: dict) -> str:
    return ("idle %.0f %% of its time holding %.1f GiB, %.0f %% of its activity within %s-%s"
            % (100 * f["idle_share"], f["idle_memory_mib"] / 1024.0, 100 * f["day_concentration"], f["busy_from"],
               f["busy_until"]))


def _of_time(f: dict) -> str:
    """'the time', or, where its nodes reported nothing for a while, the time they reported."""
    if f.get("observed_share", 1.0) >= 1.0 - 1e-9:
        return "the time"
    return "the time its nodes reported, %.0f %% of the window" % (100 * f["observed_share"])


def _serving_why(f: dict) -> str:
    return "always up (%.0f %% of %s), active %.0f %% of it" % (100 * f["presence"], _of_time(f), 100 * f["active_share"])


def _runs_why(f: dict) -> str:
    return ("up %.0f %% of %s in %d runs (median %.1f h), active %.0f %% while up: runs, then releases "
            "the GPU" % (100 * f["presence"], _of_time(f), f["runs"], f["median_run_hours"], 100 * f["active_share"]))


KIND_RULES = (
    # mostly idle, holds memory while idle, its bursts within working hours (its pod may be gone at night)
    KindRule("notebook", _is_notebook, _notebook_why,
             ("notebook_idle_share", "notebook_idle_memory_mib", "notebook_active_share", "notebook_day_concentration",
              "busy_span_hours", "idle_activity")),
    # always up
    KindRule("serving", lambda f, s: f["presence"] >= s.serving_presence, _serving_why, ("serving_presence",)),
    # runs, then releases the GPU: long runs or several GPUs per pod
    KindRule("training", lambda f, s: f["median_run_hours"] >= s.training_run_hours or f["gpus_per_replica"] > s.batch_max_gpus,
             _runs_why, ("training_run_hours", "batch_max_gpus")),
    # runs, then releases the GPU: short runs on one GPU
    KindRule("batch", lambda f, s: True, _runs_why),
)


def detect_kind(f: dict, settings: Settings = Settings()) -> tuple[str, str]:
    """The kind of a service from the features of its pattern, and why: the first of
    ``KIND_RULES`` that holds."""
    rule = next(r for r in KIND_RULES if r.applies(f, settings))
    return rule.name, rule.why(f)


# --------------------------------------------------------------------------- needs


def _gib_up(mib: float) -> float:
    """MiB to GiB rounded up to a half GiB (at least 0.5), as the inventory writes it."""
    half = max(1, int(math.ceil(mib / 512.0 - 1e-9)))
    return half // 2 if half % 2 == 0 else half / 2.0


def _memory_need(s: Settings, svc, f: dict, kind: str = "serving") -> tuple | None:
    """(MiB needed, why, whether it is a framework's reservation), or None when unknown:
    the peak plus headroom; a serving framework's flat line high on the memory of the GPUs a
    replica holds as it is; where FB_USED is missing on a MIG instance, the slice it ran in."""
    peak, capacity = f["memory_peak_mib"], f["capacity_mib"]
    gpus = max(1, f["gpus_per_replica"])
    held = capacity * gpus if capacity else None     # a replica's peak is summed over the GPUs it holds
    # Only a serving framework reserves (vLLM's gpu-memory-utilization); a training job's flat
    # memory (its allocator's cache) is its need and keeps its headroom.
    reservation = (kind == "serving" and f["memory_known"] and held and not f["pooled"]
                   and peak >= s.reservation_share * held and f["memory_p5_mib"] >= s.reservation_flatness * peak)
    if not f["memory_known"]:
        profiles = {d.profile for d in svc.devices.values() if d.profile}
        caps = [d.capacity_mib for d in svc.devices.values() if d.capacity_mib]
        if not caps or not profiles:
            return None
        need = float(max(caps))
        return need, ("%s is not reported for its MIG instance (%s); its need is at most the %d MiB of the slice "
                      "it ran in" % (METRIC_MEMORY, ", ".join(sorted(profiles)), need)), reservation
    where = "the device" if gpus == 1 else "the %d GPUs it holds" % gpus
    if reservation:
        return peak, ("flat at %.1f GiB, %.0f %% of %s: a serving framework's reservation (e.g. vLLM's "
                      "gpu-memory-utilization), not a measured need" % (peak / 1024.0, 100 * peak / held, where)), reservation
    over = "" if gpus == 1 else " over its %d GPUs (%.1f GiB each)" % (gpus, peak / gpus / 1024.0)
    return (peak * (1 + s.memory_headroom), "peak %.1f GiB%s + %.0f %% headroom"
            % (peak / 1024.0, over, 100 * s.memory_headroom), reservation)


def _compute_need(s: Settings, f: dict) -> tuple[float, str]:
    """(GPUs of compute needed, why): the percentile of activity; more than its slice where a
    MIG slice was busy at its limit."""
    compute = f["compute"] if not math.isnan(f["compute"]) else 0.0
    note = "p%g of activity %.2f of a GPU" % (s.compute_percentile, compute)
    if f["saturated_share"] >= s.saturated_share and f["saturated_fraction"]:
        compute = max(compute, f["saturated_fraction"] * s.saturated_compute_factor)
        note = ("its MIG slice (%.2f of a GPU) was busy at its limit %.0f %% of the time, so the measured "
                "activity is a lower bound: the next larger compute is proposed"
                % (f["saturated_fraction"], 100 * f["saturated_share"]))
    return compute, note


# --------------------------------------------------------------------------- sharing


@dataclass
class Case:
    """What the sharing rules read about one service."""
    kind: str
    f: dict                        # its features (features.features)
    card: object                   # gpu_catalog.GpuModel it ran on, or None
    on_dra: bool                   # it ran on a DRA server
    need: float                    # memory needed, MiB
    compute: float                 # compute needed, whole-GPU terms
    memory_gib: float              # the need as the inventory writes it
    settings: Settings = Settings()
    calibration: calibration_file.Calibration = calibration_file.DEFAULT
    neighbours: tuple = ()         # (service, p95 of its activity on a card they shared), busiest first
    mig_nodes: tuple = ()          # servers with a GPU in mode mig (or a window's) now: no MPS beside them

    @cached_property
    def profile(self):
        """The smallest MIG profile of the card holding both needs, or None."""
        return choose_profile(self.card, self.need, self.compute)

    @property
    def mig_single(self) -> bool:
        """On a MIG-capable card, one GPU per replica."""
        return self.card is not None and self.card.mig_capable and self.f["gpus_per_replica"] == 1

    @property
    def mps_clients(self) -> int:
        """Clients per card whose equal MPS share (1/clients of the memory and of the SMs, as the
        device plugin sets it) still holds this service's memory and compute: the limit follows
        its need."""
        if self.card is None or self.need <= 0:
            return 0
        by_memory = int(self.card.memory_mib // self.need)
        by_compute = int(1.0 // self.compute) if self.compute > 0 else MAX_SHARED_REPLICAS
        return min(MAX_SHARED_REPLICAS, by_memory, by_compute)

    @property
    def heavy_neighbours(self) -> tuple:
        """Neighbours on its cards at least ``mps_heavy_compute`` busy."""
        return tuple(n for n in self.neighbours if n[1] >= self.settings.mps_heavy_compute)

    @property
    def mps_candidate(self) -> bool:
        """Small inference co-located with other pods (so it runs without fault isolation now) on
        one GPU per replica, at least two equal MPS shares of the card holding its need, on a card
        without MIG or where MIG's smallest slice holding it wastes memory."""
        if self.kind != "serving" or self.card is None or self.f["gpus_per_replica"] != 1:
            return False
        if not (self.f["pooled"] or self.f.get("sharing")) or self.mps_clients < MIN_SHARED_REPLICAS:
            return False
        return (not self.card.mig_capable or self.profile is None
                or self.profile.memory_mib >= self.settings.mps_mig_waste * self.need)

    def mps_refusal(self) -> str | None:
        """Why MPS is not proposed although it is a candidate, with the measured reason: the
        calibration's MPS did not serve more than time-slicing, heavy neighbours (where MPS starved a
        light service next to heavy loops in the calibration), or MIG slices in the cluster; None
        otherwise. The figures are ratios of contended figures of one run (calibration.py)."""
        if not self.mps_candidate:
            return None
        cal = self.calibration
        if not cal.mps_serves_more:
            return ("not MPS: in the calibration (%s; %s) small inference services under MPS served %.3fx the "
                    "inferences of time-slicing, not more in every run" % (cal.source, cal.spread_text(),
                                                                           cal.mps_vs_timeslice))
        if self.heavy_neighbours and cal.mps_starves_next_to_heavy:
            return ("not MPS: it shared its card with %s; next to heavy loops a light service served %.3fx its "
                    "time-sliced throughput under MPS without limits, and equal limits cut a heavier service to %.3f of "
                    "its throughput without limits (measured on %s)"
                    % (", ".join("%s (p95 %.2f of the card)" % n for n in self.heavy_neighbours),
                       cal.mps_unlimited_small_next_to_heavy, cal.mps_equal_cap_heavier_service, cal.source))
        if self.mig_nodes:
            return ("not MPS: the cluster has MIG slices (on %s), and the device plugin does not start MPS under the "
                    "mixed MIG strategy they need" % ", ".join(self.mig_nodes))
        return None

    def whole_gpus(self, held: int | None = None) -> int:
        """Whole GPUs per replica: as many as a pod held (``held``, else the most any pod held), or
        as its memory needs."""
        per_gpu = self.card.memory_mib if self.card else self.need
        held = self.f["gpus_per_replica"] if held is None else held
        return max(held, int(math.ceil(self.need / per_gpu)) if per_gpu else 1)


@dataclass(frozen=True)
class Rule:
    name: str
    applies: Callable[[Case], bool]     # whether it decides this service
    decide: Callable[[Case], dict]      # the choice: sharing and what goes with it, and why
    settings: tuple = ()                # the Settings fields its condition reads


def _time_sliced(c: Case) -> dict:
    usable = c.card.memory_mib if c.card else c.need
    sharers = max(MIN_SHARED_REPLICAS, c.f["replicas"])
    pool_gpus = max(1, int(math.ceil(sharers * c.need / usable)))
    why = ("%d sharers of %.1f GiB each fit %d %s card%s; time-slicing (each of k sharers gets 1/k of the card, "
           "about %.0f %% lost to switching)" % (sharers, c.need / 1024.0, pool_gpus, c.card.key if c.card else "GPU",
                                                 "" if pool_gpus == 1 else "s",
                                                 100 * (1 - c.calibration.timeslice_heavy_total)))
    return dict(sharing=TIMESLICE, replicas=sharers, pool_gpus=pool_gpus,
                gpu_replicas=min(MAX_SHARED_REPLICAS, max(MIN_SHARED_REPLICAS, int(math.ceil(sharers / pool_gpus)))),
                why=why)


def _mps(c: Case) -> dict:
    clients = c.mps_clients
    replicas = max(1, c.f["replicas"])
    cal = c.calibration
    why = ("co-located small inference (%.1f GiB, p95 %.2f of a card): MPS, %d clients per %s card, each limited to "
           "1/%d (%d %% of the SMs, %.1f GiB), which holds its need; measured on %s: small inference services "
           "together served %.2fx the inferences of time-slicing under MPS (%.2fx with equal limits); the limit "
           "follows the need because an equal limit below it cut a heavier service to %.3f of its throughput without "
           "limits"
           % (c.need / 1024.0, c.compute, clients, c.card.key, clients, 100 // clients,
              c.card.memory_mib / clients / 1024.0, cal.source, cal.mps_vs_timeslice, cal.mps_equal_cap_vs_timeslice,
              cal.mps_equal_cap_heavier_service))
    if c.neighbours:
        why += "; its neighbours are light (busiest %s, p95 %.2f of the card)" % c.neighbours[0]
    return dict(sharing=MPS, replicas=replicas, gpu_replicas=clients,
                pool_gpus=max(1, int(math.ceil(replicas / float(clients)))), why=why)


def _plural(n: int, what: str) -> str:
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def _runs_whole(c: Case) -> dict:
    # A run takes the GPUs all its pods hold at once (run_gpus), in its latest shape: pods of as
    # many GPUs as the pod seen last held, as many pods as make up the run's GPUs.
    latest = c.f.get("pod_gpus_latest", c.f["gpus_per_replica"])    # features without the run's shape: one shape
    gpus = c.whole_gpus(latest)
    run_gpus = c.f.get("run_gpus", latest * max(1, c.f["replicas"]))
    pods = max(1, int(math.ceil(run_gpus / float(gpus) - 1e-9)))
    # No more memory than the cards have; on a card the catalogue does not know, the need as it is
    # (its size is unknown, and the need floored to whole GiB would ask for less than it needs).
    held_gib = int(gpus * c.card.memory_mib / MIB_PER_GIB) if c.card else c.memory_gib
    earlier = [g for g in c.f.get("pod_gpus_seen", [latest]) if g != latest]
    shape = " (%s x %s)" % (_plural(pods, "pod"), _plural(gpus, "GPU")) if pods > 1 or earlier else ""
    changed = ("; its runs changed shape in the window (earlier pods held %s each), the latest is proposed"
               % " or ".join(_plural(g, "GPU") for g in earlier)) if earlier else ""
    return dict(sharing=WHOLE, gpus=gpus, replicas=pods, run_gpus=pods * gpus,
                memory_gib=min(c.memory_gib, held_gib) or c.memory_gib,
                why="%s runs then releases: %s per run%s, queued in the team's Kueue queue "
                    "(borrows idle GPUs of the cohort)%s" % (c.kind, _plural(pods * gpus, "whole GPU"), shape, changed))


def _mig_slice(c: Case) -> dict:
    p = c.profile
    return dict(sharing=MIG, mig_profile=p.name,
                memory_gib=min(c.memory_gib, math.floor(p.memory_mib / MIB_PER_GIB * 100) / 100.0),
                why="%s holds %.1f GiB (needs %.1f) and %d/%d of the compute (needs %.2f of a GPU)"
                    % (p.name, p.memory_mib / 1024.0, c.need / 1024.0, p.compute_slices,
                       compute_slices_of(c.card), c.compute))


def _whole(why: Callable[[Case], str]) -> Callable[[Case], dict]:
    return lambda c: dict(sharing=WHOLE, gpus=c.whole_gpus(), why=why(c))


RULES = (
    Rule("notebook-pool", lambda c: c.kind == "notebook" or (c.f["pooled"] and c.kind != "serving"), _time_sliced,
         ("pooled_share",)),
    Rule("runs-whole", lambda c: c.kind in ("training", "batch"), _runs_whole),
    Rule("dra-server", lambda c: c.on_dra,
         lambda c: dict(sharing=DRA, why="runs on a DRA server: a device request for at least %d GiB" % c.memory_gib)),
    Rule("mps-co-located", lambda c: c.mps_candidate and c.mps_refusal() is None, _mps,
         ("mps_heavy_compute", "mps_mig_waste")),
    Rule("mig-fits", lambda c: c.mig_single and c.profile is not None and c.profile.size < c.card.mig_grid, _mig_slice),
    Rule("no-slice-fits", lambda c: c.mig_single,
         _whole(lambda c: "needs %.1f GiB and %.2f of a GPU: no MIG slice smaller than the whole card holds both"
                          % (c.need / 1024.0, c.compute))),
    Rule("no-mig-card", lambda c: c.card is not None and not c.card.mig_capable,
         _whole(lambda c: "%s has no MIG: a whole card" % c.card.key)),
    Rule("whole-default", lambda c: True, _whole(lambda c: "%d GPUs per replica" % c.f["gpus_per_replica"])),
)


def choose(ctx, svc, f: dict, kind: str) -> dict:
    """What to give the service: sharing, profile, GPUs, replicas, memory; why; and the rule
    that decided (the first of ``RULES`` that holds)."""
    s = ctx.settings
    card = gpu_catalog.CATALOG.get(f["model"]) if f["model"] else None
    memory = _memory_need(s, svc, f, kind)
    if memory is None:
        return {"status": "not_enough_data",
                "reason": "%s has no %s samples: its memory need is unknown" % (svc.name, METRIC_MEMORY)}
    need, memory_note, reservation = memory
    compute, compute_note = _compute_need(s, f)
    memory_gib = _gib_up(need)
    out = {"status": "ok", "memory_need_mib": int(math.ceil(need)), "memory_note": memory_note,
           "compute_note": compute_note,
           "reservation": bool(reservation), "compute_need": round(compute, 4), "memory_gib": memory_gib,
           "replicas": max(1, f["replicas"]), "gpus": 1, "mig_profile": None, "model": card.key if card else None}
    case = Case(kind=kind, f=f, card=card, on_dra=any(d.key[0] in ctx.dra_nodes for d in svc.devices.values()),
                need=need, compute=compute, memory_gib=memory_gib, settings=s,
                calibration=getattr(ctx, "calibration", None) or calibration_file.DEFAULT,
                neighbours=neighbours(ctx, svc), mig_nodes=_mig_nodes(ctx))
    rule = next(r for r in RULES if r.applies(case))
    out.update(rule.decide(case))
    out["rule"] = rule.name
    refusal = case.mps_refusal()
    if refusal:
        out["mps_refused"] = refusal
        out["why"] += "; " + refusal
    return out


def _mig_nodes(ctx) -> tuple:
    """Servers of the inventory with a GPU in mode mig, in its own mode or a window's."""
    inventory = getattr(ctx, "inventory", None)
    return tuple(n.name for n in (inventory.nodes if inventory else ())
                 if any(g.mode == MIG or any(w.mode == MIG for w in g.windows) for g in n.gpus))


def neighbours(ctx, svc) -> tuple:
    """The other services on the service's cards while it was there, each with the p95 of its
    activity there then (whole-GPU terms), busiest first; from ``ctx.services`` (empty without it)."""
    s = ctx.settings
    busiest = {}
    for other in (getattr(ctx, "services", None) or {}).values():
        if other is svc:
            continue
        for key in svc.devices.keys() & other.devices.keys():
            mine = svc.devices[key]
            there = mine.sharers > 0 if mine.sharers is not None else mine.act == mine.act    # not NaN
            p = _percentile(other.devices[key].act[there], s.compute_percentile)
            if not math.isnan(p):
                busiest[other.name] = max(busiest.get(other.name, 0.0), p)
    return tuple(sorted(((name, round(p, 3)) for name, p in busiest.items()), key=lambda n: (-n[1], n[0])))


def signature(c: dict) -> tuple:
    """What must agree between the two halves of the window: for runs, the GPUs a run takes,
    whatever its shape (2 pods x 1 GPU or 1 pod x 2 GPUs)."""
    return (c.get("status"), c.get("sharing"), c.get("mig_profile"), c.get("run_gpus", c.get("gpus")),
            c.get("pool_gpus"))
