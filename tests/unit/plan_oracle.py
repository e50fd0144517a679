"""Checks that a plan.json can really run, from the plan file and the inventory alone.

Shares no code with the planners: the only facts taken from the collection are the
catalogue's per-profile data (start slots, size, usable memory: NVIDIA's published MIG
tables, cited per model in gpu_catalog.py). Used on every fuzzed inventory that plans.

- every MIG GPU's slices sit on the model's placement grid: each at one of its profile's start
  slots, none overlapping, none past the grid, at most ``max_count`` of a profile;
- every MIG service replica has exactly one slice, big enough, of an allowed model and profile;
- for each Kueue ResourceFlavor and GPU resource, the nominal quotas of the ClusterQueues and the
  Cohort (the pool no team owns) add up to what the nodes of that flavor advertise (no quota
  without a device behind it, no device without a quota), window states included; dynamic MIG's
  memory-counter quota (MiB) is at most what its GPUs' counters hold (NVML's full-GPU instance
  memory, tests/unit/mig_grid_oracle.py), and a dynamic GPU is on a node of its flavor.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG, lookup

from mig_grid_oracle import H200

# Dynamic MIG's Kueue resource: MiB of the claimed devices' memory counter (docs/dynamic-mig.md).
DYNAMIC_MIG = "gpushare.cluster/mig-memory"

MIB_PER_GIB = 1024


def placement_problems(plan: dict) -> list[str]:
    found = []
    for node in plan["nodes"] + [n for w in plan["windows"] for n in w["nodes"]]:
        model = CATALOG[node["model"]]
        for gpu in node["gpus"]:
            slices = (gpu.get("mig") or {}).get("slices", [])
            used = [0] * max(model.mig_grid, 1)
            counts = Counter(s["profile"] for s in slices)
            where = "%s GPU %d" % (node["name"], gpu["index"])
            for s in slices:
                profile = model.profile(s["profile"])
                if s["start"] not in profile.starts:
                    found.append("%s: %s at %d, allowed starts %s" % (where, s["profile"], s["start"], profile.starts))
                for unit in range(s["start"], s["start"] + profile.size):
                    if unit >= len(used):
                        found.append("%s: %s at %d runs past the grid" % (where, s["profile"], s["start"]))
                        break
                    used[unit] += 1
            if any(n > 1 for n in used):
                found.append("%s: slices overlap %s" % (where, sorted((s["profile"], s["start"]) for s in slices)))
            for name, n in counts.items():
                if n > model.profile(name).max_count:
                    found.append("%s: %d x %s, at most %d" % (where, n, name, model.profile(name).max_count))
            if slices and dict(counts) != gpu["mig"]["profiles"]:
                found.append("%s: profiles %s but slices %s" % (where, gpu["mig"]["profiles"], dict(counts)))
    return found


def service_problems(plan: dict, variables: dict) -> list[str]:
    """MIG replicas served, read from the base state's slices against the inventory's workloads."""
    found = []
    got = defaultdict(list)
    for node in plan["nodes"]:
        for gpu in node["gpus"]:
            for s in (gpu.get("mig") or {}).get("slices", []):
                if s["workload"] is not None and gpu["mode"] == "mig":
                    got[s["workload"]].append((node["model"], s))
    for w in variables.get("gpushare_workloads") or []:
        # An explicit null sharing is not given, as the planner reads it: isolation decides.
        if not isinstance(w, dict) or (w.get("sharing") or {"hardware": "mig"}.get(w.get("isolation"))) != "mig":
            continue
        slices = got.pop(w["name"], [])
        replicas = w.get("replicas") or 1      # an explicit null is the default, as the planner reads it
        if sorted(s["replica"] for _m, s in slices) != list(range(replicas)):
            found.append("%s: replicas %s on slices, wanted 0..%d" % (w["name"], [s["replica"] for _m, s in slices],
                                                                      replicas - 1))
        for model_key, s in slices:
            profile = CATALOG[model_key].profile(s["profile"])
            if w.get("mig_profile") and s["profile"] != w["mig_profile"]:
                found.append("%s: on %s, pinned to %s" % (w["name"], s["profile"], w["mig_profile"]))
            if w.get("memory_gib") is not None and profile.memory_mib < w["memory_gib"] * MIB_PER_GIB:
                found.append("%s: %s holds %d MiB < %s GiB" % (w["name"], s["profile"], profile.memory_mib, w["memory_gib"]))
            if w.get("gpu_model") and model_key != lookup(w["gpu_model"]).key:
                found.append("%s: on %s, asked for %s" % (w["name"], model_key, w["gpu_model"]))
    found += ["slices for %s, which is no MIG workload of the inventory" % name for name in got]
    return found


def _flavor_nodes(objects, nodes) -> dict[str, list[dict]]:
    flavors = {}
    for o in objects:
        if o["kind"] == "ResourceFlavor" and o["spec"].get("nodeLabels"):
            wanted = o["spec"]["nodeLabels"]
            flavors[o["metadata"]["name"]] = [n for n in nodes if all(
                n["labels"].get(k) == v for k, v in wanted.items())]
    return flavors


def quota_problems(plan: dict) -> list[str]:
    """Per state: nominal quota per (flavor, GPU resource) == what that flavor's nodes advertise."""
    found = []
    states = [("base", plan["nodes"], plan["kueue"]["objects"])]
    states += [(w["name"], _window_nodes(plan, w), w["kueue"]["objects"]) for w in plan["windows"]]
    for state, nodes, objects in states:
        quota: Counter = Counter()
        dynamic: Counter = Counter()
        for o in objects:
            if o["kind"] not in ("ClusterQueue", "Cohort"):   # the Cohort holds the unowned pool
                continue
            for group in o["spec"].get("resourceGroups", []):
                for flavor in group["flavors"]:
                    for r in flavor["resources"]:
                        if r["name"] == DYNAMIC_MIG:
                            dynamic[(flavor["name"], r["name"])] += int(str(r["nominalQuota"]).rstrip("Mi") or 0)
                        elif r["name"] not in ("cpu", "memory"):
                            quota[(flavor["name"], r["name"])] += int(r["nominalQuota"])
        flavors = _flavor_nodes(plan["kueue"]["objects"] + objects, nodes)
        for (flavor, resource), mib in sorted(dynamic.items()):
            gpus = sum(1 for node in flavors.get(flavor, []) for g in node["gpus"] if g["mode"] == "mig-dynamic")
            if mib > gpus * H200["7g.141gb"][2]:
                found.append("%s: %s %s quota %d MiB, %d dynamic GPUs' counters hold %d"
                             % (state, flavor, resource, mib, gpus, gpus * H200["7g.141gb"][2]))
        for (flavor, resource), n in sorted(quota.items()):
            if flavor not in flavors:
                found.append("%s: quota on flavor %s, which selects no node" % (state, flavor))
                continue
            have = sum(node["advertised"].get(resource, 0) for node in flavors[flavor])
            if resource.startswith("gpushare.cluster/dra"):
                have = sum(node["gpu_count"] for node in flavors[flavor] if node.get("dra"))
            if have != n:
                found.append("%s: %s %s quota %d, the nodes advertise %d" % (state, flavor, resource, n, have))
        for node in nodes:
            for resource, n in node["advertised"].items():
                covered = sum(q for (flavor, r), q in quota.items()
                              if r == resource and node in flavors.get(flavor, []))
                if covered < n:
                    found.append("%s: %s advertises %d %s, quota covers %d" % (state, node["name"], n, resource, covered))
    return found


def _window_nodes(plan: dict, window: dict) -> list[dict]:
    inside = {n["name"]: n for n in window["nodes"]}
    return [inside.get(n["name"], n) for n in plan["nodes"]]


def problems(plan: dict, variables: dict) -> list[str]:
    return placement_problems(plan) + service_problems(plan, variables) + quota_problems(plan)
