"""A stand-in for the NVIDIA DRA driver's kubelet plugin with ``DynamicMIG``: the ResourceSlices
it publishes for one H200, in its shape (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1,
cmd/gpu-kubelet-plugin/partitions.go and mig.go):

- one slice holding only the counter set ``gpu-<minor>-counter-set`` (Kubernetes 1.35 wants
  counters and devices in slices of their own): a counter per capacity of the whole GPU (DNS
  names: ``multiprocessors``, ``copy-engines``, ``decoders``, ``encoders``, ``jpeg-engines``,
  ``ofa-engines``, ``memory`` in bytes) and ``memory-slice-<i>`` = 1 for each of the 8 slices;
- one slice of devices: the whole GPU ``gpu-<minor>`` consuming every counter, and one device per
  MIG profile and placement, ``gpu-<minor>-mig-<profile without dots>-<GI profile id>-<start>``,
  consuming its capacities and the memory slices start .. start+size-1.

Placements and sizes are NVIDIA's MIG User Guide's H200 table (tests/unit/mig_grid_oracle.py),
the capacities an H200's ``nvidia-smi mig -lgip`` and NVML memorySizeMB; nothing comes from the
collection's catalogue. Devices are listed in the driver's canonical-name order.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from mig_grid_oracle import H200  # noqa: E402

DRIVER = "gpu.nvidia.com"
PRODUCT = "NVIDIA H200"
# profile: (GI profile id, multiprocessors, copy engines, decoders, encoders, jpeg, ofa)
LGIP = {"1g.18gb": (19, 16, 1, 1, 0, 1, 0), "1g.35gb": (15, 26, 1, 1, 0, 1, 0), "2g.35gb": (14, 32, 2, 2, 0, 2, 0),
        "3g.71gb": (9, 60, 3, 3, 0, 3, 0), "4g.71gb": (5, 64, 4, 4, 0, 4, 0), "7g.141gb": (0, 132, 8, 7, 0, 7, 1)}
CAPACITIES = ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")
COUNTERS = ("multiprocessors", "copy-engines", "decoders", "encoders", "jpeg-engines", "ofa-engines")


def _capacity(profile: str) -> dict:
    values = LGIP[profile][1:]
    out = {c: str(v) for c, v in zip(COUNTERS, values)}
    out["memory"] = "%dMi" % H200[profile][2]
    return out


def _attributes(kind: str, profile: str | None = None) -> dict:
    attrs = {"type": {"string": kind}, "productName": {"string": PRODUCT}, "architecture": {"string": "Hopper"},
             "brand": {"string": "Nvidia"}, "uuid": {"string": "GPU-twin-h200-0"}}
    if profile:
        attrs["profile"] = {"string": profile}
        attrs["parentUUID"] = {"string": "GPU-twin-h200-0"}
    return attrs


def slices(node: str, generation: int = 1) -> list[dict]:
    """The node's two ResourceSlices: the counter set, then the devices."""
    full = _capacity("7g.141gb")
    counters = {name: {"value": value} for name, value in full.items()}
    counters.update({"memory-slice-%d" % i: {"value": "1"} for i in range(8)})
    pool = {"name": node, "generation": generation, "resourceSliceCount": 2}
    devices = [{"name": "gpu-0", "attributes": _attributes("gpu"),
                "capacity": {"memory": {"value": full["memory"]}},
                "consumesCounters": [{"counterSet": "gpu-0-counter-set", "counters": counters}]}]
    for profile, (size, starts, _mib) in sorted(H200.items()):
        caps = _capacity(profile)
        for start in starts:
            used = {name: {"value": value} for name, value in caps.items()}
            used.update({"memory-slice-%d" % i: {"value": "1"} for i in range(start, start + size)})
            devices.append({
                "name": "gpu-0-mig-%s-%d-%d" % (profile.replace(".", ""), LGIP[profile][0], start),
                "attributes": _attributes("mig", profile),
                "capacity": dict({c: {"value": caps[n]} for c, n in zip(CAPACITIES, COUNTERS)},
                                 memory={"value": caps["memory"]}),
                "consumesCounters": [{"counterSet": "gpu-0-counter-set", "counters": used}]})
    devices.sort(key=lambda d: d["name"])
    meta = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice"}
    return [dict(meta, metadata={"name": "%s-counters" % node},
                 spec={"driver": DRIVER, "nodeName": node, "pool": pool,
                       "sharedCounters": [{"name": "gpu-0-counter-set", "counters": counters}]}),
            dict(meta, metadata={"name": "%s-devices" % node},
                 spec={"driver": DRIVER, "nodeName": node, "pool": pool, "devices": devices})]


def device_classes() -> list[dict]:
    """The chart's DeviceClasses (templates/deviceclass-*.yaml)."""
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == '%s' && device.attributes['%s'].type == '%s'"
                                             % (DRIVER, DRIVER, kind)}}]}}
            for name, kind in (("mig.nvidia.com", "mig"), ("gpu.nvidia.com", "gpu"))]
