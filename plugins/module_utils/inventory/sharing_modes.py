# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sharing modes: one table of what each needs from the card and how the layers treat it.

Adding a mode is one ``SharingMode`` entry here plus the functions it needs in the layers that
draw or report it (``render_report.GPU_LINES``, ``render_svg.GPU_BARS``: a test checks each mode
has one). Everything else reads the attributes below, never a mode's name:

- whole: a job gets whole GPUs and waits in its team's Kueue queue;
- mig: the card is cut in hardware (NVIDIA MIG user guide), so it needs a MIG-capable card;
- timeslice, mps: several pods share one device through the NVIDIA device plugin's
  ``sharing.timeSlicing`` / ``sharing.mps`` (k8s-device-plugin README, "Shared Access to
  GPUs"), so the GPU names its replicas and an owning team;
- dra: a workload asks the NVIDIA DRA driver for a device by its attributes; a server, not a
  GPU, is set to it (``gpushare_node.dra``);
- mig-dynamic: the DRA driver's kubelet plugin creates each MIG slice when a claim is prepared
  and destroys it when the claim goes (feature gate ``DynamicMIG``, kubernetes-sigs/
  dra-driver-nvidia-gpu v0.4.1), so the GPU has no fixed layout; rules in
  inventory/dynamic_mig.py, planning in planners/dynamic_mig.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharingMode:
    name: str                          # the inventory's word (GPU mode, window mode, workload sharing)
    words: str                         # how report.md and plan.yml's table name it
    gpu_mode: bool                     # a GPU (and a sharing window) may be set to it
    shares_device: bool                # pods take turns on one device: replicas and an owning team
    device_plugin_method: str | None   # the device plugin's sharing key for it
    needs_mig: bool                    # only on a MIG-capable card
    isolation: str | None              # what a workload's ``isolation`` gets from it
    gpus_per_replica: bool             # a replica may take several GPUs (``gpus: N``)
    kueue_kind: str                    # the Kueue ResourceFlavor kind its capacity is counted in
    client_limits: bool = False        # each pod is capped at 1/replicas of the card's compute and memory
    window_mode: bool = True           # a sharing window may switch a GPU to it (if gpu_mode)


_TABLE = (
    SharingMode("whole", "whole", gpu_mode=True, shares_device=False, device_plugin_method=None,
                needs_mig=False, isolation="full", gpus_per_replica=True, kueue_kind="whole"),
    SharingMode("mig", "MIG", gpu_mode=True, shares_device=False, device_plugin_method=None,
                needs_mig=True, isolation="hardware", gpus_per_replica=False, kueue_kind="mig"),
    SharingMode("timeslice", "time-sliced", gpu_mode=True, shares_device=True, device_plugin_method="timeSlicing",
                needs_mig=False, isolation="none", gpus_per_replica=False, kueue_kind="shared"),
    # The device plugin's MPS control daemon gives each of the card's replicas an equal share
    # of memory and compute (k8s-device-plugin README, "Shared Access to GPUs", sharing.mps).
    SharingMode("mps", "MPS", gpu_mode=True, shares_device=True, device_plugin_method="mps",
                needs_mig=False, isolation="none", gpus_per_replica=False, kueue_kind="shared", client_limits=True),
    SharingMode("dra", "DRA", gpu_mode=False, shares_device=False, device_plugin_method=None,
                needs_mig=False, isolation=None, gpus_per_replica=False, kueue_kind="dra"),
    # Slices made per claim: a window never switches a GPU to or from it (that would be a re-cut).
    SharingMode("mig-dynamic", "dynamic MIG", gpu_mode=True, shares_device=False, device_plugin_method=None,
                needs_mig=True, isolation="hardware", gpus_per_replica=False, kueue_kind="mig-dynamic",
                window_mode=False),
)

MODES = {mode.name: mode for mode in _TABLE}
AUTO = "auto"                      # a GPU whose mode the planner chooses (whole or mig)
WHOLE, MIG, TIMESLICE, MPS, DRA, MIG_DYNAMIC = (m.name for m in _TABLE)

# What the inventory accepts, in the table's order.
GPU_MODES = (AUTO,) + tuple(m.name for m in _TABLE if m.gpu_mode)
WINDOW_MODES = tuple(m.name for m in _TABLE if m.gpu_mode and m.window_mode)
WORKLOAD_SHARING = tuple(MODES)
SHARED_MODES = tuple(m.name for m in _TABLE if m.shares_device)
# isolation -> the first mode that gives it (timeslice for "none": MPS is asked for by name)
ISOLATION_TO_SHARING = {iso: next(m.name for m in _TABLE if m.isolation == iso)
                        for iso in dict.fromkeys(m.isolation for m in _TABLE if m.isolation)}


def shares_device(mode: str | None) -> bool:
    """Whether pods in ``mode`` take turns on one device (replicas, an owning team)."""
    return mode in MODES and MODES[mode].shares_device


def isolation_choices() -> str:
    """``full=whole, hardware=mig, none=timeslice or mps``: what each isolation allows."""
    return ", ".join("%s=%s" % (iso, " or ".join(m.name for m in _TABLE if m.isolation == iso))
                     for iso in ISOLATION_TO_SHARING)


def modes_without_mig() -> str:
    """The GPU modes a card without MIG accepts, as a message lists them."""
    return ", ".join([m.name for m in _TABLE if m.gpu_mode and not m.needs_mig] + [AUTO])
