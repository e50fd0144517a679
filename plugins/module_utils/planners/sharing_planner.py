# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA device plugin's sharing configuration for one node, and what it advertises.

Facts this encodes (NVIDIA/k8s-device-plugin README, "Shared Access to GPUs" and "MIG
strategies"; NVIDIA/cloud-native-docs gpu-operator/gpu-sharing.rst):

* Time-slicing and MPS are set per *resource name*, never per GPU: the per-resource
  ``devices`` field is ignored by the device plugin (``api/config/v1/replicas.go``). So
  ``nvidia.com/gpu`` replicas apply to every full GPU of a node.
* To time-slice one card while its neighbours stay whole or MIG, the card is put in MIG
  mode with one full-size instance (e.g. ``7g.141gb`` on H200) and that MIG resource is
  time-sliced. Its neighbours keep ``nvidia.com/gpu`` and their own MIG slices. The
  full-size profile is then reserved for that card on that node.
* ``renameByDefault: true`` advertises ``<resource>.shared``, so the shared pool gets its
  own Kueue quota line; ``failRequestsGreaterThanOne: true`` because a pod asking for two
  replicas gets no more compute (recommended by NVIDIA, off by default).
* MPS: full GPUs only, all GPUs of the node, never with MIG, and not in a cluster with MIG
  slices at all (plan._check_mps_without_mig: the device plugin refuses MPS under
  mig-strategy mixed); ``sharing.mps`` renders like ``sharing.timeSlicing``
  (``renameByDefault``, ``failRequestsGreaterThanOne``, ``resources``), the MPS control daemon
  then limits each replica to an equal share of the card's memory and compute.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG, GpuModel
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MODES, MPS, TIMESLICE


def full_profile(model: GpuModel) -> str | None:
    """The MIG profile that takes the whole card (7g on the 8-unit grid)."""
    full = [p for p in model.base_profiles if p.size == model.mig_grid]
    return max(full, key=lambda p: p.compute_slices).name if full else None


@dataclass(frozen=True)
class NodeSharing:
    """How the device plugin shares GPUs on one node."""
    method: str | None              # None or a device_plugin_method of sharing_modes.MODES
    resource: str | None            # the resource that is shared
    replicas: int | None
    via_mig: bool                   # time-sliced cards are one full-size MIG instance
    gpus: tuple[int, ...]           # indices of the shared cards

    @property
    def shared_resource(self) -> str | None:
        return self.resource + names.SHARED_SUFFIX if self.resource else None


def node_sharing(model_key: str, modes: dict[int, str], replicas: dict[int, int]) -> NodeSharing:
    """Decide the node's sharing from the per-GPU modes (auto already resolved or not)."""
    model = CATALOG[model_key]
    sliced = tuple(sorted(i for i, m in modes.items() if m == TIMESLICE))
    mps = tuple(sorted(i for i, m in modes.items() if m == MPS))
    if mps:
        return NodeSharing(MODES[MPS].device_plugin_method, names.GPU_RESOURCE, replicas[mps[0]], False, mps)
    if not sliced:
        return NodeSharing(None, None, None, False, ())
    if len(sliced) == len(modes) or not model.mig_capable:
        return NodeSharing(MODES[TIMESLICE].device_plugin_method, names.GPU_RESOURCE, replicas[sliced[0]], False, sliced)
    profile = model.profile(full_profile(model))
    return NodeSharing(MODES[TIMESLICE].device_plugin_method, profile.resource_name, replicas[sliced[0]], True, sliced)


def has_mig(gpus: Iterable[dict]) -> bool:
    """Whether any of these GPU records (a Plan node's ``gpus``) is cut into MIG slices."""
    return any(gpu.get("mig") for gpu in gpus)


def mig_strategy(mig: bool) -> str:
    """The device plugin's ``migStrategy`` (and the ClusterPolicy's ``mig.strategy``): the one
    place it is decided. ``mixed`` where there are MIG slices: several profiles on one card
    need it, each advertised as ``nvidia.com/mig-<profile>``; ``none`` elsewhere. On a node
    without MIG devices both advertise whole GPUs as ``nvidia.com/gpu``."""
    return "mixed" if mig else "none"


def cluster_mig_strategy(node_states: Iterable[dict]) -> str:
    """The strategy for the whole cluster (the ClusterPolicy, the device plugin's default
    config for nodes the Plan does not know): ``mixed`` when any node, in the base state or
    any sharing window (``node_states`` holds them all), has MIG slices."""
    return mig_strategy(any(has_mig(node["gpus"]) for node in node_states))


def refuses_mps(strategy: str) -> bool:
    """Whether the device plugin refuses MPS under this MIG strategy (cmd/nvidia-device-plugin
    main.go: "using --mig-strategy=mixed is not supported with MPS")."""
    return strategy == "mixed"


def device_plugin_config(sharing: NodeSharing, mig: bool) -> dict:
    """The device plugin config document for one node (ConfigMap value, version v1);
    ``mig``: whether the node has MIG slices."""
    config: dict = {"version": "v1", "flags": {"migStrategy": mig_strategy(mig)}}
    if sharing.method:
        # For MPS the device plugin forces failRequestsGreaterThanOne to true (api/config/v1/config.go,
        # since v0.15.0); it is written for both so the config says what the plugin does.
        method = {"renameByDefault": True, "failRequestsGreaterThanOne": True}
        method["resources"] = [{"name": sharing.resource, "replicas": sharing.replicas}]
        config["sharing"] = {sharing.method: method}
    return config


def advertised(whole_gpus: int, mig_profiles: list[str], model_key: str, sharing: NodeSharing) -> dict[str, int]:
    """Resources the device plugin will advertise on the node (mixed MIG strategy)."""
    model = CATALOG[model_key]
    counts: Counter = Counter()
    if whole_gpus:
        counts[names.GPU_RESOURCE] += whole_gpus
    for name in mig_profiles:
        counts[model.profile(name).resource_name] += 1
    if sharing.method:
        shared_cards = counts.pop(sharing.resource, 0)
        counts[sharing.shared_resource] = shared_cards * sharing.replicas
    return dict(sorted(counts.items()))
