# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an inventory may ask of ``mode: mig-dynamic`` (MIG slices made per claim by the DRA driver).

Facts from kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (the pinned chart):

* ``DynamicMIG`` is one feature gate of the whole driver (``featureGates`` in the chart's
  values.yaml). With it on, the kubelet plugin serves every dynamic-capable GPU of every node it
  runs on dynamically, "mutually exclusive with static MIG" (cmd/gpu-kubelet-plugin/nvlib.go,
  enumerateGpusAndMigDevices). So once one GPU is dynamic, every MIG GPU that the plugin serves
  (every GPU of a DRA node, ``gpushare_node.dra``) must be too, and a dynamic GPU's server must
  be a DRA node.
* The plugin turns MIG mode on itself only where that needs no GPU reset: Hopper and newer
  (nvlib.go, ``supportsMIGModeToggle``; on Ampere "SetMigMode sets a pending mode that
  requires a GPU reset").
* ``DynamicMIG`` cannot be combined with ``MPSSupport``, ``PassthroughSupport`` or
  ``NVMLDeviceHealthCheck`` (pkg/featuregates/featuregates.go, ValidateFeatureGates).

Every rule here adds a problem naming the path, the value and the fix; model.load_inventory
reports them with all the others.
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG_DYNAMIC, MPS

# Architectures whose MIG mode only changes with a GPU reset, which the kubelet plugin never does.
MIG_MODE_NEEDS_RESET = ("Ampere",)
# The ``memory`` counter each MIG device consumes, in MiB: NVML's GPU instance profile
# memorySizeMB, which the kubelet plugin publishes as bytes (cmd/gpu-kubelet-plugin/mig.go,
# CommonCapacitiesMig, v0.4.1). Kueue charges a claim exactly this, so quotas are planned in it;
# it is not the catalogue's usable memory. Read from NVML on an H200, driver 580.159.04
# (tests/fixtures/nvidia/h200-nvml-mig-profiles.json). A model missing here cannot be dynamic:
# its quotas could not be sized.
DRIVER_MEMORY_MIB = {
    "h200-141gb": {"1g.18gb": 16384, "1g.35gb": 33280, "2g.35gb": 33280, "3g.71gb": 71424, "4g.71gb": 71424,
                   "7g.141gb": 143360},
}
# The driver's gates DynamicMIG refuses beside it (featuregates.go); the collection sets none of them.
EXCLUSIVE_GATES = ("MPSSupport", "PassthroughSupport", "NVMLDeviceHealthCheck")


def dynamic_capable(model_key: str) -> bool:
    """Whether the DRA driver can make MIG slices per claim on this model."""
    card = gpu_catalog.CATALOG[model_key]
    return card.mig_capable and card.architecture not in MIG_MODE_NEEDS_RESET and model_key in DRIVER_MEMORY_MIB


def in_use(nodes) -> bool:
    return any(g.mode == MIG_DYNAMIC for n in nodes for g in n.gpus)


def check(problems, nodes) -> None:
    """The rules of the module docstring, over the inventory's servers (model.Node)."""
    dynamic = in_use(nodes)
    for node in nodes:
        card = gpu_catalog.CATALOG[node.model]
        mine = [g for g in node.gpus if g.mode == MIG_DYNAMIC]
        for gpu in mine:
            if card.mig_capable and card.architecture in MIG_MODE_NEEDS_RESET:
                problems.add(gpu.path + ".mode", "%s is %s: the DRA driver cannot turn MIG mode on without a GPU "
                             "reset, so it cannot make slices per claim there" % (card.key, card.architecture),
                             MIG_DYNAMIC, "mig, whole or auto on %s" % card.key,
                             "Use mode: mig (a fixed layout the GPU Operator applies), or put dynamic MIG on a "
                             "Hopper or newer server")
            elif card.mig_capable and not dynamic_capable(node.model):
                problems.add(gpu.path + ".mode", "the DRA driver's memory counter of %s's MIG profiles is not known "
                             "to the collection, so its counter quotas cannot be sized" % card.key, MIG_DYNAMIC,
                             "mig-dynamic on %s" % ", ".join(sorted(DRIVER_MEMORY_MIB)),
                             "Use mode: mig on this server, or add the model's NVML memorySizeMB per profile to "
                             "DRIVER_MEMORY_MIB (inventory/dynamic_mig.py)")
            for window in gpu.windows:
                problems.add(window.path, "a dynamic MIG GPU makes its slices per claim; a window that switches "
                             "it would re-cut it", window.mode, "no schedule on a mig-dynamic GPU",
                             "Remove the window; to lend the GPU, let its team lend its quota (lend: true)")
        if mine and not node.dra:
            problems.add(node.path + ".dra", "GPUs %s are mig-dynamic: the DRA driver's kubelet plugin makes their "
                         "slices, and it runs on DRA servers only" % [g.index for g in mine], False,
                         "dra: true on a server with mig-dynamic GPUs",
                         "Set dra: true on this server, or mode: mig on these GPUs")
        if mine and any(g.mode == MPS for g in node.gpus):
            problems.add(node.path + ".gpus", "MPS next to dynamic MIG: the DRA driver refuses DynamicMIG "
                         "together with MPSSupport", sorted({g.mode for g in node.gpus}),
                         "mig-dynamic or whole GPUs on this server",
                         "Run MPS on a server without dra: true (the device plugin's MPS), or make these GPUs "
                         "mig-dynamic")
        if dynamic and node.dra and dynamic_capable(node.model):
            for gpu in node.gpus:
                if gpu.mode != MIG_DYNAMIC:
                    problems.add(gpu.path + ".mode", "DynamicMIG is one switch of the DRA driver: with it on, "
                                 "the driver makes MIG slices on demand on every %s GPU of a DRA server, so this "
                                 "GPU cannot stay %s" % (card.key, gpu.mode), gpu.mode,
                                 "mode: mig-dynamic on every GPU of this server",
                                 "Set mode: mig-dynamic here, or dra: false on this server (then whole or mig "
                                 "GPUs through the device plugin)")
