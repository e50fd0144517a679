# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dynamic MIG (``mode: mig-dynamic``): claims, counter quotas and the placement guarantee.

* Claims: each ``sharing: mig-dynamic`` workload gets a ResourceClaimTemplate of DeviceClass
  ``mig.nvidia.com`` whose CEL selector names its MIG profile and its GPU's product, the
  attributes the kubelet plugin publishes (``profile``, ``productName``; cmd/gpu-kubelet-plugin
  mig.go, v0.4.1). The profile is chosen as for static MIG: the pin, else the least memory that
  holds the replica, then the fewest compute slices (gpu_catalog.profile_for_memory).
* Quotas: Kueue v0.19.2 charges a claim, per counter source, the named counter of the
  devices its request matches (the largest value among them; pkg/dra/counters.go,
  computeCounterCharges). The counter is ``memory``: every placement of one profile consumes the
  same amount, and two profiles of the same memory take the same number of memory slices.
  Memory slices themselves cannot be charged: the driver publishes them as eight counters
  ``memory-slice-<i>``, and a 1g request's matching devices cover slices 0-6 between them, so
  Kueue would charge it 7, not 1.
* The guarantee: Kueue counts memory and knows no placement, so a quota of a whole GPU's
  memory admits, e.g., eight 1g.18gb slices where the grid has seven starts. For each model the
  quota is the largest charge below the cheapest mix of the workloads' profiles that no set of
  the model's dynamic GPUs can place (``guarantee``); every mix Kueue may admit under it can be
  placed. Mixes are not bounded by the declared replicas: Kueue bounds them by quota only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import mig_geometry
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG, profile_for_memory
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.dynamic_mig import DRIVER_MEMORY_MIB, EXCLUSIVE_GATES
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG_DYNAMIC, MODES

API = "resource.k8s.io/v1"
COUNTER = "memory"
# Driver feature gate and Kubernetes feature gate (KEP-4815: beta, on by default from 1.36;
# on 1.35 set on kube-apiserver, kube-scheduler and the kubelet).
DRIVER_GATE = "DynamicMIG"
KUBERNETES_GATE = "DRAPartitionableDevices"
# The first minor whose ResourceSlice API takes the driver's counter sets in a slice of their own.
MINIMUM_KUBERNETES = "1.35"
# Count vectors the exact search may hold; above it the first-fit bound is used (``guarantee``).
MAX_STATES = 200_000


@dataclass(frozen=True)
class Guarantee:
    model: str
    gpus: int
    profiles: tuple[str, ...]
    quota_mib: int                 # the planned total: every admissible mix places
    capacity_mib: int              # the GPUs' memory counters: what Kueue alone would sell
    witness: tuple[tuple[str, int], ...]   # the cheapest mix that no placement holds ((): none)
    witness_mib: int
    exact: bool

    def as_dict(self) -> dict:
        return {"model": self.model, "gpus": self.gpus, "profiles": list(self.profiles), "quota_mib": self.quota_mib,
                "capacity_mib": self.capacity_mib, "unplaceable_mix": dict(self.witness),
                "unplaceable_mix_mib": self.witness_mib, "exact": self.exact}


def charge(model: str, profile: str) -> int:
    return DRIVER_MEMORY_MIB[model][profile]


def _cost(model, profiles, vector) -> int:
    return sum(n * charge(model, p) for p, n in zip(profiles, vector))


def guarantee(model: str, profiles: tuple[str, ...], gpus: int, max_states: int = MAX_STATES) -> Guarantee:
    """The largest counter quota under which every mix of ``profiles`` places on ``gpus`` GPUs.

    Exact: the set of count vectors that ``gpus`` GPUs can hold is the sum of ``gpus`` copies
    of one GPU's placeable multisets (mig_geometry.patterns; a sub-multiset of a placeable one
    places too, so the set is closed downwards). The cheapest mix outside it is one placeable
    mix plus one slice; the quota is the dearest placeable mix below that. Above ``max_states``
    vectors: a bound by first fit instead (any mix of charge at most q1 places on one GPU, so
    one whose charge stays below gpus x (q1 - c_max) + c_max fills the GPUs one by one)."""
    profiles = tuple(sorted(profiles))
    capacity = gpus * max(DRIVER_MEMORY_MIB[model].values())
    if not profiles:
        return Guarantee(model, gpus, profiles, capacity, capacity, (), 0, True)
    one = {tuple(dict(p).get(name, 0) for name in profiles)
           for p in mig_geometry.patterns(model, profiles)} | {(0,) * len(profiles)}
    reach = {(0,) * len(profiles)}
    for _gpu in range(gpus):
        reach = {tuple(a + b for a, b in zip(r, o)) for r in reach for o in one}
        if len(reach) > max_states:
            return _first_fit_bound(model, profiles, gpus, capacity)
    witness, witness_cost = None, None
    for vector in reach:
        for i in range(len(profiles)):
            grown = vector[:i] + (vector[i] + 1,) + vector[i + 1:]
            if grown not in reach:
                cost = _cost(model, profiles, grown)
                if witness_cost is None or (cost, grown) < (witness_cost, witness):
                    witness, witness_cost = grown, cost
    quota = max(c for c in (_cost(model, profiles, v) for v in reach) if c < witness_cost)
    return Guarantee(model, gpus, profiles, quota, capacity,
                     tuple((p, n) for p, n in zip(profiles, witness) if n), witness_cost, True)


def _first_fit_bound(model, profiles, gpus, capacity) -> Guarantee:
    single = guarantee(model, profiles, 1)
    biggest = max(charge(model, p) for p in profiles)
    quota = max(0, gpus * (single.quota_mib - biggest) + biggest) if single.quota_mib >= biggest else single.quota_mib
    return Guarantee(model, gpus, profiles, min(quota, capacity), capacity, (), 0, False)


def selector(model: str, profile: str) -> str:
    attrs = "device.attributes['%s']" % names.DRA_DEVICE_CLASS
    return "%s.profile == '%s' && %s.productName == '%s'" % (attrs, profile, attrs, CATALOG[model].product_name)


def template_name(workload_name: str, profile: str) -> str:
    """The template's name carries its profile: a ResourceClaimTemplate's spec is immutable
    (Kubernetes pkg/apis/resource/validation, ValidateResourceClaimTemplateUpdate), so a resized
    service gets a new template, and its pods, as they restart, claims of the new profile."""
    return "%s-%s" % (workload_name, profile)


def claim_template(workload, model: str, profile: str, namespace: str) -> dict:
    request = {"deviceClassName": names.MIG_DEVICE_CLASS, "count": 1,
               "selectors": [{"cel": {"expression": selector(model, profile)}}]}
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": template_name(workload.name, profile), "namespace": namespace,
                     "labels": dict(names.MANAGED_LABEL)},
        "spec": {"spec": {"devices": {"requests": [{"name": "mig", "exactly": request}]}}},
    }


def device_class_mapping(models) -> dict:
    """Kueue's deviceClassMappings entry: claims of mig.nvidia.com charged the ``memory``
    counter of the dynamic models' devices, as one quota resource (a second mapping of the same
    class would fail every claim that matches none of its devices: counters.go,
    processCounterCharge)."""
    products = ", ".join("'%s'" % CATALOG[m].product_name for m in sorted(models))
    return {"name": names.DYNAMIC_MIG_RESOURCE, "deviceClassNames": [names.MIG_DEVICE_CLASS],
            "sources": [{"counter": {"name": COUNTER, "driver": names.DRA_DEVICE_CLASS, "deviceSelector": {"cel": {
                "expression": "device.attributes['%s'].productName in [%s]" % (names.DRA_DEVICE_CLASS, products)}}}}]}


def driver_feature_gates(plan_nodes) -> dict:
    """The DRA driver's featureGates: DynamicMIG when a GPU is mig-dynamic, and the gates it
    excludes off by name, so a chart default can never combine them."""
    if not any(g["mode"] == MIG_DYNAMIC for n in plan_nodes for g in n["gpus"]):
        return {}
    return dict({gate: False for gate in EXCLUSIVE_GATES}, **{DRIVER_GATE: True})


def kubernetes_needs(plan_nodes) -> dict:
    """What Kubernetes must serve when a GPU is mig-dynamic: the driver publishes counter sets
    (ResourceSlice ``sharedCounters``) and devices that consume them (KEP-4815, partitionable
    devices), in slices of their own as 1.35's API wants them (pkg/apis/resource/validation). Off by
    default before 1.36: kube-apiserver and kube-scheduler (and kube-controller-manager and the
    kubelet, which the twin's spike did not rule out) need ``DRAPartitionableDevices``; an
    apiserver without it stores the slices with their counters silently dropped."""
    if not any(g["mode"] == MIG_DYNAMIC for n in plan_nodes for g in n["gpus"]):
        return {}
    return {"feature_gates": {KUBERNETES_GATE: True}, "minimum_minor": MINIMUM_KUBERNETES,
            "why": "mig-dynamic GPUs on %s" % ", ".join(sorted({n["name"] for n in plan_nodes
                                                                for g in n["gpus"] if g["mode"] == MIG_DYNAMIC}))}


def gpu_shares(gpus, quota_mib: int) -> dict:
    """Each owner's (None: the cohort's) share of a model's planned quota, by the GPUs it owns,
    rounded down so the shares never add up to more than the quota."""
    owned = defaultdict(int)
    for _node, _index, team in gpus:
        owned[team] += 1
    return {team: quota_mib * n // len(gpus) for team, n in owned.items()}


def plan_dynamic(inventory, problems, warnings) -> dict:
    """Everything the Plan holds for dynamic MIG; problems and warnings recorded."""
    gpus = defaultdict(list)       # model -> [(node, index, team)]
    for node in inventory.nodes:
        for g in node.gpus:
            if g.mode == MIG_DYNAMIC:
                gpus[node.model].append((node.name, g.index, g.team))
    workloads, profiles, templates = [], defaultdict(set), []
    for w in inventory.workloads:
        if w.sharing != MIG_DYNAMIC:
            continue
        model = _workload_model(w, gpus, problems)
        if model is None:
            continue
        card = CATALOG[model]
        allowed = tuple(DRIVER_MEMORY_MIB[model])
        if w.mig_profile:
            profile = w.mig_profile if w.mig_profile in allowed else None
            if profile is None:
                problems.add(w.path + ".mig_profile", "is not a dynamic MIG profile of %s" % model, w.mig_profile,
                             ", ".join(allowed), "Profile names differ between GPU models")
                continue
        else:
            chosen = profile_for_memory(card, w.memory_mib, allowed)
            if chosen is None:
                problems.add(w.path + ".memory_gib", "no MIG profile of %s holds %g GiB" % (model, w.memory_gib),
                             w.memory_gib, "at most %g" % (max(p.memory_mib for p in card.base_profiles) / 1024.0),
                             "Lower memory_gib, or run it on whole GPUs (sharing: whole)")
                continue
            profile = chosen.name
        profiles[model].add(profile)
        workloads.append({"name": w.name, "team": w.team, "model": model, "profile": profile,
                          "replicas": w.replicas, "charge_mib": charge(model, profile),
                          "claim_template": template_name(w.name, profile)})
        team = next((t for t in inventory.teams if t.name == w.team), None)
        templates += [claim_template(w, model, profile, ns) for ns in sorted(team.namespaces if team else ())]
    guarantees = {m: guarantee(m, tuple(profiles[m]), len(g)) for m, g in sorted(gpus.items())}
    for m, g in guarantees.items():
        demand = sum(w["replicas"] * w["charge_mib"] for w in workloads if w["model"] == m)
        _report(m, g, demand, [w for w in workloads if w["model"] == m], warnings)
    return {"gpus": {m: [{"node": n, "index": i, "team": t} for n, i, t in g] for m, g in sorted(gpus.items())},
            "guarantees": [g.as_dict() for g in guarantees.values()],
            "shares": {m: gpu_shares(gpus[m], g.quota_mib) for m, g in guarantees.items()},
            "workloads": workloads, "claim_templates": templates}


def _workload_model(w, gpus, problems) -> str | None:
    models = sorted(gpus)
    if w.gpu_model:
        if w.gpu_model in gpus:
            return w.gpu_model
        problems.add(w.path + ".gpu_model", "no %s GPU is mig-dynamic" % w.gpu_model, w.gpu_model,
                     "a model with mig-dynamic GPUs: %s" % (", ".join(models) or "none"),
                     "Set mode: mig-dynamic on a %s server's GPUs, or pin another model" % w.gpu_model)
        return None
    if len(models) == 1:
        return models[0]
    problems.add(w.path + (".gpu_model" if models else ".sharing"),
                 "needs one GPU model with mig-dynamic GPUs" if models else "no GPU is mig-dynamic",
                 None if models else MIG_DYNAMIC, "one of %s" % ", ".join(models) if models else "a mig-dynamic GPU",
                 "Pin gpu_model: the claim names one product, and Kueue picks the flavor by it" if models
                 else "Set mode: mig-dynamic on the GPUs of a DRA server (dra: true), or use sharing: mig")
    return None


def _report(model, g: Guarantee, demand: int, workloads, warnings) -> None:
    names_ = ", ".join("%s (%d x %s)" % (w["name"], w["replicas"], w["profile"]) for w in workloads)
    if g.witness and g.witness_mib <= g.capacity_mib:
        warnings.append("dynamic MIG on %s: counter quotas total %d MiB, not the %d MiB the %d GPUs' memory counters "
                        "hold: Kueue alone would admit %s (%d MiB), which no placement on %d GPU(s) holds. To sell "
                        "more, add a %s GPU or give services profiles that tile the grid"
                        % (model, g.quota_mib, g.capacity_mib, g.gpus, _mix(g.witness), g.witness_mib, g.gpus, model))
    if not g.exact:
        warnings.append("dynamic MIG on %s: %d GPUs are too many for the exact search; quotas use the first-fit bound "
                        "(%d MiB)" % (model, g.gpus, g.quota_mib))
    if demand > g.quota_mib:
        warnings.append("dynamic MIG on %s: %s want %d MiB at once but the guaranteed quota is %d MiB: not all can "
                        "run together. Add a %s GPU or lower replicas" % (model, names_, demand, g.quota_mib, model))


def _mix(witness) -> str:
    return " + ".join("%d x %s" % (n, p) for p, n in witness)


def capacities(dynamic: dict, capacity_type, flavor_name) -> list:
    """kueue_quotas.Capacity entries of the planned shares, in MiB (unit ``Mi``); one GPU's
    worth for borrowing limits counted in GPUs is the quota over the GPUs."""
    out = []
    for g in dynamic["guarantees"]:
        flavor = flavor_name(g["model"], MODES[MIG_DYNAMIC].kueue_kind)
        per_gpu = g["quota_mib"] // g["gpus"] if g["gpus"] else 0
        for team, mib in sorted(dynamic["shares"][g["model"]].items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
            out.append(capacity_type(flavor, names.DYNAMIC_MIG_RESOURCE, team, mib, unit="Mi", per_gpu=per_gpu))
    return out
