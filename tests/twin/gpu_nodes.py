"""GPU nodes of the cluster twin, made from the Plan, and a stand-in for the GPU Operator's
MIG Manager and device plugin.

`create_nodes(twin, plan)` makes one KWOK node per `plan["nodes"][i]` as it is before the
gpu_operator role runs: the labels GPU Feature Discovery and the operator set
(`nvidia.com/gpu.product`, the NVML product name with spaces as dashes, and
`nvidia.com/mig.config: all-disabled`, the operator's default on MIG-capable nodes) and
every GPU advertised whole as `nvidia.com/gpu`, with cpu, memory and pods.

`OperatorSim` is the stand-in, polling the nodes (a thread while the roles run, or one
`sync()` pass). Per node it does what the real components do when the role changes labels:

- MIG Manager: when `nvidia.com/mig.config.state` is `pending` it applies the layout the
  `nvidia.com/mig.config` label names and sets the state to `success`;
- device plugin: it advertises, in `status.capacity` and `status.allocatable`, what the
  MIG Manager and device-plugin ConfigMaps the gpu_operator role applied give the node's
  GPUs under its (`nvidia.com/device-plugin.config`, `nvidia.com/mig.config`) labels, read
  by `advertised.py` from the upstream formats (a resource no longer there is set to 0, as
  the kubelet does for a resource no plugin advertises), re-advertising whenever those
  labels change. It never reads the Plan's `advertised`: the tests compare the two.

It does only that: it does not check that a layout is possible (the planner's tests do),
does not drain or refuse on busy GPUs (the role decides that before it sets the label) and
takes no time to re-partition. A label naming no config of the ConfigMaps is an error,
recorded and raised by `stop()`.
"""
from __future__ import annotations

import threading
import urllib.parse

import advertised as from_configmaps
from twinclient import ApiError

PRODUCT_LABEL = "nvidia.com/gpu.product"
DP_LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"
MIG_STATE_LABEL = "nvidia.com/mig.config.state"
OPERATOR_DEFAULT_MIG_CONFIG = "all-disabled"
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# The ConfigMaps the gpu_operator role applies (its defaults) in the operator's namespace.
GPU_OPERATOR_NAMESPACE = "gpu-operator"
CONFIGMAPS = ("gpushare-mig-config", "gpushare-device-plugin-config")
PODS = "110"


def product_label(product: str) -> str:
    return product.replace(" ", "-")


def resources(node_state: dict, advertised: dict) -> dict:
    res = {"cpu": str(node_state["cpus"]), "memory": f"{node_state['memory_gib']}Gi", "pods": PODS}
    res.update({name: str(count) for name, count in advertised.items()})
    return res


def initial_node(node_state: dict) -> dict:
    """The node before the gpu_operator role: operator defaults, every GPU whole."""
    whole = {"nvidia.com/gpu": node_state["gpu_count"]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_state["name"], "annotations": dict(KWOK_ANNOTATION),
                     "labels": {PRODUCT_LABEL: product_label(node_state["product"]),
                                MIG_LABEL: OPERATOR_DEFAULT_MIG_CONFIG}},
        "status": {"capacity": resources(node_state, whole), "allocatable": resources(node_state, whole)},
    }


def node_path(name: str) -> str:
    return f"/api/v1/nodes/{urllib.parse.quote(name)}"


def advertise(twin, node_state: dict, advertised: dict) -> dict:
    """Node status as the device plugin (through the kubelet) reports ``advertised``."""
    current = twin.get(node_path(node_state["name"]))["status"]
    new = resources(node_state, advertised)
    status = {}
    for field in ("capacity", "allocatable"):
        values = dict(new)
        for name in current.get(field) or {}:
            if name.startswith("nvidia.com/") and name not in new:
                values[name] = "0"  # the kubelet zeroes a resource no plugin advertises
        status[field] = values
    return twin.patch_status_merge(node_path(node_state["name"]), {"status": status})


def create_nodes(twin, plan: dict) -> list[str]:
    names = []
    for node_state in plan["nodes"]:
        node = initial_node(node_state)
        twin.create("/api/v1/nodes", node)
        twin.patch_status_merge(node_path(node_state["name"]), {"status": node["status"]})  # status on create is not kept
        names.append(node_state["name"])
    return names


def delete_nodes(twin, plan: dict) -> None:
    """Deletes the Plan's nodes (those create_nodes made; gone already is fine). A node left
    behind keeps the labels the roles set, and a later inventory's ResourceFlavor with the
    same labels would send its pods there."""
    for node_state in plan["nodes"]:
        twin.request("DELETE", node_path(node_state["name"]), ok=(200, 202, 404))


class Reconciler:
    """Calls sync() every INTERVAL seconds on a daemon thread from start() to stop(); an
    AssertionError from sync() ends the loop and is raised again by stop()."""

    name = "reconciler"

    def __init__(self, twin, interval: float):
        self.twin, self.interval = twin, interval
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sync(self):
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
            except (OSError, ApiError):
                continue  # the apiserver restarting (test_restarts) or a concurrent writer: the next pass retries
            except AssertionError as exc:  # reported by stop()
                self.errors.append(str(exc))
                return

    def start(self):
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        if self.errors:
            raise AssertionError("%s failed: %s" % (self.name, "; ".join(self.errors)))


class OperatorSim(Reconciler):
    """The MIG Manager and device plugin stand-in for the Plan's nodes (see the module doc);
    of the Plan it reads only the hardware (node names, GPU count, CPUs, memory)."""

    name = "operator stand-in"

    def __init__(self, twin, plan: dict, interval: float = 0.2, namespace: str = GPU_OPERATOR_NAMESPACE):
        super().__init__(twin, interval)
        self.base = {n["name"]: {k: n[k] for k in ("name", "gpu_count", "cpus", "memory_gib")} for n in plan["nodes"]}
        self.namespace = namespace
        self.current: dict[str, tuple] = {}
        self.advertised: list[tuple] = []  # (node, dp config, mig config), in order

    def _configmaps(self) -> dict:
        """The role's ConfigMaps' data by name ({} before the role ran)."""
        found = {}
        for name in CONFIGMAPS:
            try:
                found[name] = self.twin.get(f"/api/v1/namespaces/{self.namespace}/configmaps/{name}").get("data") or {}
            except ApiError as err:
                if err.status != 404:
                    raise
        return found

    def advertises(self, node: dict, labels: dict) -> dict:
        """What the node's GPUs advertise under ``labels``: before the role ran (no ConfigMaps,
        the operator's default labels) every GPU whole; after, what the ConfigMaps give."""
        configmaps = self._configmaps()
        if not configmaps and DP_LABEL not in labels and labels.get(MIG_LABEL) == OPERATOR_DEFAULT_MIG_CONFIG:
            return {"nvidia.com/gpu": node["gpu_count"]}
        if len(configmaps) != len(CONFIGMAPS):
            raise AssertionError(f"node {node['name']}: labels {labels} but ConfigMaps {sorted(configmaps)}")
        return from_configmaps.advertised(configmaps, labels, node["gpu_count"])

    def sync(self) -> list[str]:
        """One reconcile pass; returns the nodes re-advertised."""
        changed = []
        for name, node in self.base.items():
            labels = self.twin.get(node_path(name))["metadata"]["labels"]
            key = (name, labels.get(DP_LABEL), labels.get(MIG_LABEL))
            pending = labels.get(MIG_STATE_LABEL) == "pending"
            if self.current.get(name) != key or pending:
                advertise(self.twin, node, self.advertises(node, labels))
                self.current[name] = key
                self.advertised.append(key)
                changed.append(name)
            if pending:
                self.twin.request("PATCH", node_path(name), {"metadata": {"labels": {MIG_STATE_LABEL: "success"}}},
                                  content_type="application/merge-patch+json")
        return changed
