"""GPU nodes of the cluster twin, made from the Plan, and a stand-in for the device plugin.

`create_nodes(twin, plan)` makes one KWOK node per `plan["nodes"][i]` with exactly the Plan's
node labels (what the gpu_operator role sets) plus `nvidia.com/gpu.product` (what GPU
Feature Discovery would set: the NVML product name with spaces as dashes), and the status
the device plugin would report.

`advertise(twin, node_state)` is the simulated NVIDIA device plugin: it writes the node's
`status.capacity` and `status.allocatable` from a Plan node state, the base one
(`plan["nodes"][i]`) or a window's (`plan["windows"][w]["nodes"][j]`): its `advertised`
counts plus cpu, memory and pods. A resource the new state no longer has is set to 0, as
the kubelet does for a resource its device plugin stopped advertising.

`DevicePluginSim.sync()` re-advertises a node when its `nvidia.com/device-plugin.config`
and `nvidia.com/mig.config` labels name another state's configs, as the real device plugin
(which watches its config label and restarts with the new config) and the MIG Manager
(which re-partitions on a mig.config label change) would. It does only that: it does not
check that a MIG layout is possible, does not model the MIG Manager's drain of GPU pods,
its `mig.config.state` label or the time a re-partition takes, and it knows only the
states the Plan lists (an unknown label pair raises).
"""
from __future__ import annotations

import urllib.parse

PRODUCT_LABEL = "nvidia.com/gpu.product"
DP_LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
PODS = "110"


def product_label(product: str) -> str:
    return product.replace(" ", "-")


def node_labels(node_state: dict) -> dict:
    labels = dict(node_state["labels"])
    labels[PRODUCT_LABEL] = product_label(node_state["product"])
    return labels


def resources(node_state: dict) -> dict:
    res = {"cpu": str(node_state["cpus"]), "memory": f"{node_state['memory_gib']}Gi", "pods": PODS}
    res.update({name: str(count) for name, count in node_state["advertised"].items()})
    return res


def node_object(node_state: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_state["name"], "annotations": dict(KWOK_ANNOTATION),
                     "labels": node_labels(node_state)},
        "status": {"capacity": resources(node_state), "allocatable": resources(node_state)},
    }


def advertise(twin, node_state: dict) -> dict:
    """The simulated device plugin: node status from one Plan node state (base or window)."""
    path = f"/api/v1/nodes/{node_state['name']}"
    current = twin.get(path)["status"]
    new = resources(node_state)
    status = {}
    for field in ("capacity", "allocatable"):
        values = dict(new)
        for name in current.get(field) or {}:
            if name.startswith("nvidia.com/") and name not in new:
                values[name] = "0"  # the kubelet zeroes a resource no plugin advertises
        status[field] = values
    return twin.patch_status_merge(path, {"status": status})


def set_labels(twin, node_state: dict) -> dict:
    """Node labels of a state, as the gpu_operator role patches them (20-node-labels.yaml)."""
    return twin.request("PATCH", f"/api/v1/nodes/{node_state['name']}",
                        {"metadata": {"labels": node_labels(node_state)}},
                        content_type="application/merge-patch+json")


def create_nodes(twin, plan: dict) -> list[str]:
    names = []
    for node_state in plan["nodes"]:
        twin.create("/api/v1/nodes", node_object(node_state))
        advertise(twin, node_state)  # status on create is not guaranteed to be kept
        names.append(node_state["name"])
    return names


def states(plan: dict) -> dict:
    """(node, device-plugin config, mig config) -> Plan node state, for the base and every window."""
    out = {}
    for node_state in plan["nodes"] + [n for w in plan.get("windows", []) for n in w["nodes"]]:
        labels = node_state["labels"]
        out[(node_state["name"], labels.get(DP_LABEL), labels.get(MIG_LABEL))] = node_state
    return out


class DevicePluginSim:
    """Re-advertises a node when its config labels change to another Plan state's."""

    def __init__(self, twin, plan: dict):
        self.twin = twin
        self.states = states(plan)
        self.nodes = [n["name"] for n in plan["nodes"]]
        self.current: dict[str, tuple] = {}

    def sync(self) -> list[str]:
        """One reconcile pass; returns the nodes re-advertised."""
        changed = []
        for name in self.nodes:
            labels = self.twin.get(f"/api/v1/nodes/{urllib.parse.quote(name)}")["metadata"]["labels"]
            key = (name, labels.get(DP_LABEL), labels.get(MIG_LABEL))
            if key not in self.states:
                raise AssertionError(f"node {name}: labels {key[1:]} name no state of the Plan")
            if self.current.get(name) != key:
                advertise(self.twin, self.states[key])
                self.current[name] = key
                changed.append(name)
        return changed
