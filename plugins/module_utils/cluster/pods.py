# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods hold GPUs, and which of them a MIG layout change would disturb: helpers the
gpu_operator role (through node_labels and the gpu_pods filter) uses on the Pods that
kubernetes.core lists. Pure functions of that list and the Plan."""

from __future__ import annotations

import datetime
import json

from ansible_collections.gpushare.cluster.plugins.module_utils.names import GPU_RESOURCE, MIG_RESOURCE_PREFIX, SHARED_SUFFIX


def _asked(pod: dict) -> set[str]:
    spec = pod.get("spec", {})
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    return {name for c in containers for part in ("limits", "requests")
            for name in ((c.get("resources") or {}).get(part) or {}) if name.startswith("nvidia.com/")}


def _pod_name(pod: dict) -> str:
    return "%s/%s" % (pod.get("metadata", {}).get("namespace"), pod.get("metadata", {}).get("name"))


def _live(pods: list, exclude_namespaces) -> list[dict]:
    return [p for p in pods or [] if p.get("metadata", {}).get("namespace") not in exclude_namespaces
            and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]


def gpu_pods(pods: list, exclude_namespaces: list | tuple = ()) -> list[str]:
    """namespace/name of pods that hold a GPU (an nvidia.com/* request or limit, or a
    ResourceClaim), not finished, outside exclude_namespaces (the operator's operands)."""
    return [_pod_name(p) for p in _live(pods, exclude_namespaces) if _asked(p) or p.get("spec", {}).get("resourceClaims")]


def _gpu_resources(gpu: dict) -> set[str]:
    """The device-plugin resources one planned GPU serves."""
    if gpu.get("resource"):
        return {gpu["resource"]}
    return {MIG_RESOURCE_PREFIX + s["profile"] for s in (gpu.get("mig") or {}).get("slices", [])}


def _layouts_of_config(entries: list) -> dict[int, dict | None]:
    """GPU index -> profile counts (None: MIG off) of one mig-parted config's entries."""
    out = {}
    for entry in entries or []:
        for index in entry.get("devices") or []:
            out[index] = dict(entry.get("mig-devices") or {}) if entry.get("mig-enabled") else None
    return out


def _resources_of_layout(profiles: dict | None) -> set[str]:
    """What a GPU cut as ``profiles`` may serve, plain or shared (its device-plugin config is
    not known): MIG off, a whole or time-sliced GPU; MIG on, each profile's instances."""
    if profiles is None:
        return {GPU_RESOURCE, GPU_RESOURCE + SHARED_SUFFIX}
    return {MIG_RESOURCE_PREFIX + p + suffix for p in profiles for suffix in ("", SHARED_SUFFIX)}


def _changing_gpus(plan: dict, node: str, current_config: str | None, planned_config: str,
                   live_configs: dict | None = None) -> dict | None:
    """GPU index -> resources it serves now, for the GPUs that changing ``node``'s
    nvidia.com/mig.config from ``current_config`` to ``planned_config`` re-partitions
    (mig-parted leaves the others alone). The current layout is a state of this plan or, on
    day two, the config of that name in ``live_configs`` (the mig-parted ``mig-configs`` read
    from the cluster before the new ConfigMap replaced it). None when it is neither (first
    install, another tool's layout): then which GPUs change is unknown."""
    states = {n["mig_config"]["name"]: n for n in plan["nodes"] + [m for w in plan.get("windows", []) for m in w["nodes"]]
              if n["name"] == node and n.get("mig_config")}
    if planned_config not in states:
        return None

    def layout(gpu):  # what mig-parted applies: MIG on or off, and the profile counts
        return None if gpu["mig"] is None else gpu["mig"]["profiles"]

    planned = {g["index"]: layout(g) for g in states[planned_config]["gpus"]}
    if current_config in states:
        now = {g["index"]: g for g in states[current_config]["gpus"]}
        return {i: sorted(_gpu_resources(now[i])) for i in now if layout(now[i]) != planned[i]}
    if current_config in (live_configs or {}):
        now = _layouts_of_config(live_configs[current_config])
        if set(now) == set(planned):
            return {i: sorted(_resources_of_layout(now[i])) for i in now if now[i] != planned[i]}
    return None


def _parse_time(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.strptime(value.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z")


def pods_on_changing_gpus(pods: list, plan: dict, node: str, current_config: str | None, planned_config: str,
                          layout_since: str | None = None, exclude_namespaces: list | tuple = (),
                          live_configs: dict | None = None) -> list[str]:
    """namespace/name of the pods that may hold a GPU the MIG change re-partitions.

    The device plugin does not say which GPU a pod got, but a pod keeps the device it was
    given at start, so it can only be on a changing GPU if it asks for a resource that GPU
    serves now and started after that GPU's layout last changed (``layout_since``, the JSON
    of LAYOUT_SINCE_ANNOTATION). Without that record, or from a layout that is no state of
    the plan, every pod asking for such a resource (or for any GPU) counts. Pods with a
    ResourceClaim always count."""
    changing = _changing_gpus(plan, node, current_config, planned_config, live_configs)
    if changing is None:
        return gpu_pods(pods, exclude_namespaces)
    changed_at = {index: _parse_time(stamp) for index, stamp in (json.loads(layout_since) if layout_since else {}).items()}

    def may_hold(pod, index, resources):
        if not _asked(pod) & set(resources):
            return False
        started = _parse_time(pod.get("status", {}).get("startTime") or pod.get("metadata", {}).get("creationTimestamp"))
        since = changed_at.get(str(index))
        return started is None or since is None or started >= since

    return [_pod_name(p) for p in _live(pods, exclude_namespaces)
            if p.get("spec", {}).get("resourceClaims") or any(may_hold(p, i, r) for i, r in changing.items())]


def gpu_layout_since(plan: dict, node: str, current_config: str | None, planned_config: str,
                     layout_since: str | None, now: str, live_configs: dict | None = None) -> str:
    """The new LAYOUT_SINCE_ANNOTATION value: ``now`` (RFC 3339, UTC) for each GPU the change
    re-partitions (every GPU when that is unknown), earlier entries kept for the others."""
    since = json.loads(layout_since) if layout_since else {}
    changing = _changing_gpus(plan, node, current_config, planned_config, live_configs)
    gpus = changing.keys() if changing is not None else [
        g["index"] for n in plan["nodes"] if n["name"] == node for g in n["gpus"]]
    since.update({str(i): now for i in gpus})
    return json.dumps(dict(sorted(since.items(), key=lambda kv: int(kv[0]))), separators=(",", ":"))
