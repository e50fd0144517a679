"""DRA GPU nodes of the cluster twin, made from the Plan, and a stand-in for the NVIDIA DRA driver.

The twin has no kubelet and no GPU, so nothing would publish what the DRA Driver for NVIDIA
GPUs (`gpu.nvidia.com`, kubernetes-sigs/dra-driver-nvidia-gpu) publishes on a real
cluster. This module writes those objects from the Plan's nodes with `dra: true`:

`node_object(node_state)` / `create_nodes(twin, plan)`: one KWOK node per DRA node of the
Plan, labels exactly the Plan's `labels` (`nvidia.com/dra-kubelet-plugin=true`,
`nvidia.com/gpu.deploy.device-plugin=false`, the model label, `nvidia.com/mig.config` on
MIG-capable cards) plus `nvidia.com/gpu.product` as GPU Feature Discovery sets it (the
NVML name, spaces as dashes, as on gpu_nodes.py's nodes), the annotation
`kwok.x-k8s.io/node: fake`, and a status of cpu, memory and pods only: no `nvidia.com/*`
extended resource, because the DRA driver, not the device plugin, serves these GPUs. (That
also keeps the device-plugin tests' pods, which ask for `nvidia.com/gpu`, off these nodes.)
Nothing is imported from gpu_nodes.py, so the two stand-ins can change independently.

`resource_slice(node_state)`: what the driver's kubelet plugin publishes for the node
(`site/content/docs/reference/resourceslice-attributes.md`,
`cmd/gpu-kubelet-plugin/deviceinfo.go` and `mig.go` of kubernetes-sigs/
dra-driver-nvidia-gpu): one `resource.k8s.io/v1` ResourceSlice, driver `gpu.nvidia.com`,
pool named after the node (generation 1, resourceSliceCount 1), `nodeName` set. One device
per planned GPU:

- a whole GPU is `gpu-<index>` (the driver uses the minor number; the twin takes the index)
  with attributes `type=gpu`, `uuid`, `productName` (the NVML name, the Plan node's
  `product`), `brand`, `architecture`, and as version attributes `cudaComputeCapability`,
  `driverVersion`, `cudaDriverVersion`; capacity `memory` = the card's total memory, NVML
  `memory.total`, which is `gpu_catalog.CATALOG[model].memory_mib` MiB (e.g. H200 143771Mi,
  measured on a real card; L4 23034Mi);
- a GPU the Plan cuts into MIG slices publishes its slices instead of itself (static MIG:
  the driver does not announce a MIG-enabled parent): `gpu-<index>-mig-<profile without
  dots>-<GI profile id>-<placement start>` with the parent's attributes plus `type=mig`,
  `profile`, `parentUUID`, its own `uuid`, capacity `memory` = the profile's usable MiB
  (gpu_catalog: the lowest published reading of NVML's memorySizeMB, so on some drivers a
  real card publishes a little more) and `memorySlice<N>` = 1 per placement slot
  it occupies. The planner gives DRA nodes no MIG layout today (plan.py plans MIG only on
  device-plugin nodes), so this path is only used if that changes; GI profile ids are known
  for the 7-way family only (the MIG User Guide's -lgipp for A100), other grids raise.

Fixed values, the same on every node (one driver for the fleet): driver 580.159.04 and CUDA
13.0 as read on the real H200 (tests/fixtures/nvidia/h200/nvidia-smi-q.txt), published as
the driver does, through semver (`580.159.4`, `13.0.0`); brand `Nvidia` (go-nvlib's name for
NVML_BRAND_NVIDIA, as in the driver's attribute reference); compute capability per model
from `COMPUTE_CAPABILITY`. UUIDs are fake but deterministic (uuid5 of node and device).
Not published: `resource.kubernetes.io/pciBusID`, `pcieRoot`, `numaNode`, `addressingMode`
(no PCI topology is faked), and the MIG capacities `multiprocessors`, `copyEngines`,
`decoders`, `encoders`, `jpegEngines`, `ofaEngines` (not in the catalogue).

`device_classes()`: the DeviceClasses the driver's Helm chart creates (v0.4.1 chart
templates `deviceclass-gpu.yaml`, `deviceclass-mig.yaml`): `gpu.nvidia.com` (CEL `type ==
'gpu'`, and `extendedResourceName: nvidia.com/gpu` as the chart renders it for
resource.k8s.io/v1; an apiserver without the DRAExtendedResource gate drops that field) and
`mig.nvidia.com` (`type == 'mig'`). The twin cannot install the chart, so this stand-in
creates them; the vfio and ComputeDomain classes are left out.

The stand-in stops there: no kubelet plugin runs, so nothing calls NodePrepareResources,
no CDI spec is written and no device reaches a container; KWOK marks the pod Running as for
any pod. It does not re-publish when the Plan changes (generation stays 1) and has no
device health, sharing (time-slicing, MPS) or DynamicMIG.
"""
from __future__ import annotations

import re
import uuid

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog

DRIVER = "gpu.nvidia.com"
API = "/apis/resource.k8s.io/v1"
PRODUCT_LABEL = "nvidia.com/gpu.product"
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
PODS = "110"
# tests/fixtures/nvidia/h200/nvidia-smi-q.txt: "Driver Version: 580.159.04", "CUDA Version: 13.0".
DRIVER_VERSION = "580.159.04"
CUDA_DRIVER_VERSION = "13.0"
BRAND = "Nvidia"
# CUDA compute capability per catalogue key: NVIDIA's "CUDA GPU Compute Capability" table
# (developer.nvidia.com/cuda-gpus); H200's 9.0 also read on the real card (docs/gpu-facts.md).
COMPUTE_CAPABILITY = {
    "a100-40gb": "8.0", "a100-80gb": "8.0", "a30": "8.0", "a10": "8.6",
    "h100-80gb": "9.0", "h100-94gb": "9.0", "h100-96gb": "9.0", "gh200-144gb": "9.0", "h200-141gb": "9.0",
    "b200": "10.0", "gb200": "10.0", "b300": "10.3", "gb300": "10.3", "rtx-pro-6000": "12.0",
    "l4": "8.9", "l40s": "8.9", "l40": "8.9", "t4": "7.5",
}
# nvidia-smi GPU instance profile ids of the 7-way family (-lgipp of the MIG User Guide
# for A100; the same ids on the real H200, tests/fixtures/nvidia/h200/mig-lgip.txt), keyed by
# (compute slices, placement size, media extensions).
GI_PROFILE_IDS_7WAY = {(1, 1, False): 19, (1, 1, True): 20, (1, 2, False): 15, (2, 2, False): 14,
                       (3, 4, False): 9, (4, 4, False): 5, (7, 8, False): 0}
DEVICE_CLASSES = {
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
}
UUID_NAMESPACE = uuid.UUID("6f1a9c52-3b0e-4c61-9a57-0d4c7e2b9f10")  # the twin's own, arbitrary


def semver(version: str) -> str:
    """A version as the driver publishes it (Masterminds semver, parsed and printed):
    missing parts are 0 and leading zeros go, '580.159.04' -> '580.159.4', '9.0' -> '9.0.0'."""
    parts = [int(p) for p in version.split(".")]
    return ".".join(str(p) for p in (parts + [0, 0, 0])[:3])


def fake_uuid(prefix: str, *names) -> str:
    return "%s-%s" % (prefix, uuid.uuid5(UUID_NAMESPACE, "/".join(str(n) for n in names)))


def dra_nodes(plan: dict) -> list[dict]:
    return [n for n in plan["nodes"] if n["dra"]]


def node_labels(node_state: dict) -> dict:
    """The Plan's labels plus what GPU Feature Discovery sets: the NVML name, spaces as dashes."""
    return dict(node_state["labels"], **{PRODUCT_LABEL: node_state["product"].replace(" ", "-")})


def node_status(node_state: dict) -> dict:
    res = {"cpu": str(node_state["cpus"]), "memory": f"{node_state['memory_gib']}Gi", "pods": PODS}
    return {"capacity": dict(res), "allocatable": dict(res)}


def node_object(node_state: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_state["name"], "annotations": dict(KWOK_ANNOTATION),
                     "labels": node_labels(node_state)},
        "status": node_status(node_state),
    }


def _string(value: str) -> dict:
    return {"string": value}


def _version(value: str) -> dict:
    return {"version": semver(value)}


def gpu_attributes(node_state: dict, index: int) -> dict:
    card = gpu_catalog.CATALOG[node_state["model"]]
    return {
        "type": _string("gpu"),
        "uuid": _string(fake_uuid("GPU", node_state["name"], index)),
        "productName": _string(node_state["product"]),
        "brand": _string(BRAND),
        "architecture": _string(card.architecture),
        "cudaComputeCapability": _version(COMPUTE_CAPABILITY[card.key]),
        "driverVersion": _version(DRIVER_VERSION),
        "cudaDriverVersion": _version(CUDA_DRIVER_VERSION),
    }


def whole_gpu(node_state: dict, index: int) -> dict:
    card = gpu_catalog.CATALOG[node_state["model"]]
    return {"name": f"gpu-{index}", "attributes": gpu_attributes(node_state, index),
            "capacity": {"memory": {"value": f"{card.memory_mib}Mi"}}}


def gi_profile_id(card: gpu_catalog.GpuModel, profile: gpu_catalog.MigProfile) -> int:
    key = (profile.compute_slices, profile.size, profile.media_extensions)
    if card.mig_grid != 8 or profile.variant not in ("", "+me") or key not in GI_PROFILE_IDS_7WAY:
        raise ValueError(f"no GPU instance profile id known for {profile.name} on {card.key}")
    return GI_PROFILE_IDS_7WAY[key]


def mig_device(node_state: dict, index: int, mig_slice: dict) -> dict:
    card = gpu_catalog.CATALOG[node_state["model"]]
    profile = card.profile(mig_slice["profile"])
    parent = gpu_attributes(node_state, index)
    attributes = {k: v for k, v in parent.items() if k != "uuid"}
    attributes.update({
        "type": _string("mig"),
        "profile": _string(profile.name),
        "parentUUID": parent["uuid"],
        "uuid": _string(fake_uuid("MIG", node_state["name"], index, profile.name, mig_slice["start"])),
    })
    capacity = {"memory": {"value": f"{profile.memory_mib}Mi"}}
    for slot in range(mig_slice["start"], mig_slice["start"] + profile.size):
        capacity[f"memorySlice{slot}"] = {"value": "1"}
    name = "gpu-%d-mig-%s-%d-%d" % (index, re.sub(r"[^a-z0-9-]", "-", profile.name.replace(".", "").lower()),
                                    gi_profile_id(card, profile), mig_slice["start"])
    return {"name": name, "attributes": attributes, "capacity": capacity}


def devices(node_state: dict) -> list[dict]:
    out = []
    for gpu in node_state["gpus"]:
        if gpu.get("mig") and gpu["mig"].get("slices"):
            out += [mig_device(node_state, gpu["index"], s) for s in gpu["mig"]["slices"]]
        else:
            out.append(whole_gpu(node_state, gpu["index"]))
    return out


def slice_name(node_name: str) -> str:
    # The driver lets the apiserver generate "<node>-gpu.nvidia.com-<random>"; a fixed name
    # here, so that the test can delete exactly its own slices.
    return f"{node_name}-{DRIVER}"


def resource_slice(node_state: dict) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": slice_name(node_state["name"])},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_state["name"],
            "pool": {"name": node_state["name"], "generation": 1, "resourceSliceCount": 1},
            "devices": devices(node_state),
        },
    }


def device_classes() -> list[dict]:
    classes = []
    for name, expression in DEVICE_CLASSES.items():
        spec = {"selectors": [{"cel": {"expression": expression}}]}
        if name == "gpu.nvidia.com":
            spec["extendedResourceName"] = "nvidia.com/gpu"
        classes.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                        "metadata": {"name": name}, "spec": spec})
    return classes


def create_nodes(twin, plan: dict) -> list[str]:
    """KWOK nodes for the Plan's DRA nodes (status written after create, as gpu_nodes does)."""
    names = []
    for node_state in dra_nodes(plan):
        path = f"/api/v1/nodes/{node_state['name']}"
        twin.create("/api/v1/nodes", node_object(node_state))
        twin.patch_status_merge(path, {"status": node_status(node_state)})
        names.append(node_state["name"])
    return names


def publish(twin, plan: dict) -> list[dict]:
    """The kubelet plugin's part: one ResourceSlice per DRA node; returns them as stored."""
    return [twin.create(f"{API}/resourceslices", resource_slice(n)) for n in dra_nodes(plan)]


def install_classes(twin) -> list[str]:
    """The chart's part: the DeviceClasses that do not exist yet; returns those created."""
    created = []
    for obj in device_classes():
        path = f"{API}/deviceclasses/{obj['metadata']['name']}"
        if twin.request("GET", path, ok=(200, 404)).get("kind") == "DeviceClass":
            continue
        twin.create(f"{API}/deviceclasses", obj)
        created.append(obj["metadata"]["name"])
    return created


def remove(twin, plan: dict, classes=()) -> None:
    """Deletes the slices and nodes of the Plan's DRA nodes, and the DeviceClasses CLASSES."""
    for node_state in dra_nodes(plan):
        twin.delete(f"{API}/resourceslices/{slice_name(node_state['name'])}")
        twin.delete(f"/api/v1/nodes/{node_state['name']}")
    for name in classes:
        twin.delete(f"{API}/deviceclasses/{name}")
