"""A DRA workload that asks for "a GPU with at least 40 GiB" lands only on a device that has it.

The Plan of tests/twin/inventory-dra (two servers given to the DRA driver: dra-l4-01 with
four L4, 23034 MiB each, and dra-h200-01 with one H200, 143771 MiB; the workload
long-context-eval with `device_request: {min_memory_gib: 40}`). dra_devices.py makes the
KWOK nodes, the ResourceSlices the NVIDIA DRA driver would publish and the chart's
DeviceClasses; the Plan's ResourceClaimTemplate is applied by the dra_driver role
(playbooks/site.yml with only that stage; a second run changes nothing). The pods are plain Pods without a Kueue queue label
that use the template through spec.resourceClaims[].resourceClaimTemplateName: this test checks
the driver's devices and the scheduler only, so it applies no Kueue objects and none of the
inventory's admission policies (the kueue role's); on a cluster the policy would refuse such a
pod in a team namespace (tests/twin/test_enforcement.py). The namespaces do get their Pod
Security level from the dra_driver role, so the pods are "restricted"-compliant;
KWOK runs a bare pod until it is deleted (its pod-complete stage only applies to Job pods).

Checked: the claim the resourceclaim controller makes from the template is allocated by
the real scheduler to the H200 (published memory >= 40Gi), the pod is bound to that node and
Running; a second such pod stays Pending, Unschedulable, while the four L4 stay free; no L4
is ever allocated, nor the H200 to two claims at once; once the first pod is deleted the
second gets the H200. The nodes, slices, pods, DeviceClasses and namespaces this test
created are removed at the end, so the other twin tests of the session do not see them.
Measured numbers go to build/twin/dra.json (or $GPUSHARE_TWIN_RESULTS).
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog

import dra_devices
from conftest import run_playbook, write_results
from twinclient import condition, is_true

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "tests" / "twin" / "inventory-dra"
RESOURCE = dra_devices.API
WORKLOAD = "long-context-eval"
MIN_BYTES = 40 * 2 ** 30
TIMEOUT = 120
RESULTS: dict = {}
_UNITS = {"": 1, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "k": 10 ** 3, "M": 10 ** 6,
          "G": 10 ** 9, "T": 10 ** 12}


def quantity_bytes(value: str) -> int:
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?", value)
    assert m, f"quantity {value!r} not understood"
    return int(m.group(1)) * _UNITS[m.group(2) or ""]


@pytest.fixture(name="dra_plan", scope="module")
def fixture_dra_plan() -> dict:
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
    from inventories import load_dir
    return build_plan(load_dir(INVENTORY))


def workload_namespace(plan) -> str:
    wl = next(w for w in plan["workloads"] if w["name"] == WORKLOAD)
    return next(t for t in plan["teams"] if t["name"] == wl["team"])["namespaces"][0]


def template_name(plan) -> str:
    return next(w for w in plan["workloads"] if w["name"] == WORKLOAD)["claim_template"]


def ensure_namespace(twin, name) -> bool:
    """Creates namespace NAME unless it exists; True if created. Waits out a Terminating one
    (an earlier run's) and for the default ServiceAccount, which pod admission needs."""
    path = f"/api/v1/namespaces/{name}"

    def settled():
        ns = twin.request("GET", path, ok=(200, 404))
        return "absent" if ns.get("kind") != "Namespace" else (None if ns["metadata"].get("deletionTimestamp") else "live")

    state = twin.wait_for(f"namespace {name} not Terminating", settled, timeout=TIMEOUT)
    if state == "absent":
        twin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    twin.wait_for(f"default ServiceAccount in {name}", lambda: twin.request(
        "GET", f"{path}/serviceaccounts/default", ok=(200, 404)).get("kind") == "ServiceAccount", timeout=TIMEOUT)
    return state == "absent"


def pod_object(name, ns, template) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/name": WORKLOAD}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "main", "image": "registry.invalid/gpushare/long-context-eval:1",
                            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                            "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }


def delete_pod(twin, ns, name, grace=1) -> None:
    twin.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}",
                 {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": grace}, ok=(200, 202, 404))


def wait_gone(twin, what, path) -> None:
    twin.wait_for(f"{what} gone", lambda: twin.request("GET", path, ok=(200, 404)).get("kind") == "Status",
                  timeout=TIMEOUT, interval=0.2)


@pytest.fixture(name="dra_cluster", scope="module")
def fixture_dra_cluster(twin_session, dra_plan):
    twin, plan = twin_session, dra_plan
    nodes = dra_devices.dra_nodes(plan)
    assert [n["name"] for n in nodes] == ["dra-h200-01", "dra-l4-01"], [n["name"] for n in nodes]
    dra_devices.remove(twin, plan)  # what an interrupted earlier run against this twin left
    for n in nodes:
        wait_gone(twin, f"old node {n['name']}", f"/api/v1/nodes/{n['name']}")
    namespaces = sorted({ns for t in plan["teams"] for ns in t["namespaces"]})
    created_ns = [ns for ns in namespaces if ensure_namespace(twin, ns)]
    classes = dra_devices.install_classes(twin)
    names = dra_devices.create_nodes(twin, plan)
    for name in names:
        twin.wait_for(f"node {name} Ready", lambda n=name: is_true(twin.get(f"/api/v1/nodes/{n}"), "Ready"),
                      timeout=TIMEOUT)
    slices = dra_devices.publish(twin, plan)
    # The Plan's claim templates (and their namespaces) by the dra_driver role, as on a real
    # cluster (dra_driver_install: false: the twin has no driver to install).
    first = run_playbook(INVENTORY, roles=("dra_driver",))
    assert first["counts"]["changed"] > 0
    second = run_playbook(INVENTORY, roles=("dra_driver",))
    assert second["counts"]["changed"] == 0, second["stdout"][-3000:]
    state = {"nodes": names, "slices": slices, "classes": classes, "namespaces": namespaces,
             "created_namespaces": created_ns, "pods": []}
    yield state
    ns = workload_namespace(plan)
    for name in state["pods"]:
        delete_pod(twin, ns, name, grace=0)
    for name in state["pods"]:
        wait_gone(twin, f"pod {name}", f"/api/v1/namespaces/{ns}/pods/{name}")
    dra_devices.remove(twin, plan, classes)
    for name in created_ns:
        twin.delete(f"/api/v1/namespaces/{name}")
    for n in nodes:
        wait_gone(twin, f"node {n['name']}", f"/api/v1/nodes/{n['name']}")


def published(twin) -> dict:
    """(pool, device) -> device, over the DRA driver's ResourceSlices of the dra-* nodes."""
    out = {}
    for rs in twin.get(f"{RESOURCE}/resourceslices")["items"]:
        spec = rs["spec"]
        if spec["driver"] == dra_devices.DRIVER and spec.get("nodeName", "").startswith("dra-"):
            for dev in spec["devices"]:
                out[(spec["pool"]["name"], dev["name"])] = dev
    return out


class Ledger:
    """Every allocation seen on the namespace's ResourceClaims while the test polls."""

    def __init__(self, twin, ns):
        self.twin, self.ns = twin, ns
        self.seen: dict[str, set] = {}
        self.shared: list = []  # (device, claims) whenever two claims held one device at once

    def claims(self) -> dict:
        items = self.twin.get(f"{RESOURCE}/namespaces/{self.ns}/resourceclaims")["items"]
        holders: dict[tuple, list] = {}
        for claim in items:
            for res in allocation_results(claim):
                device = (res["pool"], res["device"])
                self.seen.setdefault(claim["metadata"]["name"], set()).add(device)
                holders.setdefault(device, []).append(claim["metadata"]["name"])
        self.shared += [(device, names) for device, names in holders.items() if len(names) > 1]
        return {c["metadata"]["name"]: c for c in items}

    def allocated_pools(self) -> set:
        return {pool for devices in self.seen.values() for pool, _device in devices}


def pod_claim(twin, ledger, ns, pod_name):
    """The claim generated for POD_NAME's `gpu` entry, once the controller has made it."""
    claims = ledger.claims()
    pod = twin.get(f"/api/v1/namespaces/{ns}/pods/{pod_name}")
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == "gpu" and status.get("resourceClaimName") in claims:
            return pod, claims[status["resourceClaimName"]]
    return pod, None


def bound(twin, ns, name, phase=None):
    """The pod once it has a node (and is in PHASE, if given), else None."""
    pod = twin.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    if pod["spec"].get("nodeName") and (phase is None or pod["status"].get("phase") == phase):
        return pod
    return None


def allocation_results(claim) -> list:
    return (((claim or {}).get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []


@pytest.mark.usefixtures("dra_cluster")
def test_dra_objects_published(twin_session, dra_plan):
    """Nodes, slices and classes are stored as the stand-in wrote them (the apiserver's DRA
    validation accepts them), and the Plan's claim template is owned by field manager gpushare."""
    twin, plan = twin_session, dra_plan
    devices = published(twin)
    for state in dra_devices.dra_nodes(plan):
        live = twin.get(f"/api/v1/nodes/{state['name']}")
        assert live["metadata"]["labels"] == dict(state["labels"], **{"nvidia.com/gpu.product": state["product"].replace(" ", "-")})
        assert live["metadata"]["labels"]["nvidia.com/gpu.product"] in ("NVIDIA-H200", "NVIDIA-L4")
        assert live["metadata"]["labels"]["nvidia.com/dra-kubelet-plugin"] == "true"
        for field in ("capacity", "allocatable"):
            assert not [r for r in live["status"][field] if r.startswith("nvidia.com/")], live["status"][field]
        rs = twin.get(f"{RESOURCE}/resourceslices/{dra_devices.slice_name(state['name'])}")["spec"]
        assert rs["pool"] == {"name": state["name"], "generation": 1, "resourceSliceCount": 1}
        assert rs["nodeName"] == state["name"] and rs["driver"] == "gpu.nvidia.com"
        assert [d["name"] for d in rs["devices"]] == [f"gpu-{g['index']}" for g in state["gpus"]]
        for dev in rs["devices"]:
            attrs = dev["attributes"]
            assert attrs["type"] == {"string": "gpu"} and attrs["productName"] == {"string": state["product"]}
            assert attrs["driverVersion"] == {"version": "580.159.4"} and attrs["cudaDriverVersion"] == {"version": "13.0.0"}
            assert quantity_bytes(dev["capacity"]["memory"]["value"]) == gpu_catalog.CATALOG[state["model"]].memory_mib * 2 ** 20
            assert (state["name"], dev["name"]) in devices
    big = sorted(k for k, d in devices.items() if quantity_bytes(d["capacity"]["memory"]["value"]) >= MIN_BYTES)
    assert big == [("dra-h200-01", "gpu-0")], big
    classes = {c["metadata"]["name"]: c for c in twin.get(f"{RESOURCE}/deviceclasses")["items"]}
    for obj in dra_devices.device_classes():
        assert classes[obj["metadata"]["name"]]["spec"]["selectors"] == obj["spec"]["selectors"]
    # Dropped by an apiserver without the DRAExtendedResource feature gate.
    RESULTS["gpu_class_extended_resource_name"] = classes["gpu.nvidia.com"]["spec"].get("extendedResourceName")
    ns, name = workload_namespace(plan), template_name(plan)
    rct = twin.get(f"{RESOURCE}/namespaces/{ns}/resourceclaimtemplates/{name}")
    assert "gpushare" in {m["manager"] for m in rct["metadata"]["managedFields"]}
    expr = rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
    assert expr == "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", expr
    RESULTS["claim_selector"] = expr


def test_mig_devices_pass_validation(twin_session, dra_plan):
    """The MIG path of the stand-in, which the planner does not use on DRA nodes today: an H200
    cut by hand into 3g.71gb + 2g.35gb + 1g.18gb+me, sent as a dry run (nothing is stored)."""
    state = dict(next(n for n in dra_plan["nodes"] if n["model"] == "h200-141gb"), name="dra-mig-dry-run")
    state["gpus"] = [dict(state["gpus"][0], mode="mig", mig={"slices": [
        {"profile": "3g.71gb", "start": 0}, {"profile": "2g.35gb", "start": 4}, {"profile": "1g.18gb+me", "start": 6}]})]
    obj = dra_devices.resource_slice(state)
    stored = twin_session.create(f"{RESOURCE}/resourceslices?dryRun=All", obj)
    devices = {d["name"]: d for d in stored["spec"]["devices"]}
    assert sorted(devices) == ["gpu-0-mig-1g18gb-me-20-6", "gpu-0-mig-2g35gb-14-4", "gpu-0-mig-3g71gb-9-0"], sorted(devices)
    big = devices["gpu-0-mig-3g71gb-9-0"]
    assert big["attributes"]["type"] == {"string": "mig"} and big["attributes"]["profile"] == {"string": "3g.71gb"}
    # the catalogue's usable MiB (the lowest published H200 reading: 69.50 GiB, NVIDIA/mig-parted#120)
    assert big["capacity"]["memory"] == {"value": "71168Mi"}
    assert gpu_catalog.CATALOG["h200-141gb"].profile("3g.71gb").memory_mib == 71168
    assert sorted(k for k in big["capacity"] if k.startswith("memorySlice")) == [f"memorySlice{i}" for i in range(4)]
    parents = {d["attributes"]["parentUUID"]["string"] for d in devices.values()}
    assert len(parents) == 1 and all(d["attributes"]["uuid"]["string"].startswith("MIG-") for d in devices.values())


def test_claim_lands_on_the_device_with_enough_memory(twin_session, dra_plan, dra_cluster):
    twin, plan = twin_session, dra_plan
    ns, template = workload_namespace(plan), template_name(plan)
    devices = published(twin)
    small = sorted(k for k, d in devices.items() if quantity_bytes(d["capacity"]["memory"]["value"]) < MIN_BYTES)
    assert len(small) == 4 and {pool for pool, _d in small} == {"dra-l4-01"}, small
    ledger = Ledger(twin, ns)

    def create(name):
        twin.create(f"/api/v1/namespaces/{ns}/pods", pod_object(name, ns, template))
        dra_cluster["pods"].append(name)
        return time.monotonic()

    def allocated(name):
        pod, claim = pod_claim(twin, ledger, ns, name)
        return (pod, claim) if allocation_results(claim) else None

    # The first pod: claim from the template, allocated, pod bound and Running.
    first, second = f"{WORKLOAD}-0", f"{WORKLOAD}-1"
    t0 = create(first)
    _pod, claim = twin.wait_for(f"{first}'s claim allocated", lambda: allocated(first), timeout=TIMEOUT, interval=0.1)
    t_alloc = time.monotonic()
    results = allocation_results(claim)
    assert len(results) == 1 and results[0]["driver"] == "gpu.nvidia.com" and results[0]["request"] == "gpu", results
    device = (results[0]["pool"], results[0]["device"])
    assert quantity_bytes(devices[device]["capacity"]["memory"]["value"]) >= MIN_BYTES, devices[device]
    assert device == ("dra-h200-01", "gpu-0"), device
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    pod = twin.wait_for(f"{first} bound", lambda: bound(twin, ns, first), timeout=TIMEOUT, interval=0.1)
    t_bind = time.monotonic()
    assert pod["spec"]["nodeName"] == device[0], pod["spec"].get("nodeName")
    node_terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert device[0] in json.dumps(node_terms), node_terms
    assert [r.get("name") for r in claim["status"].get("reservedFor", [])] == [first], claim["status"]
    twin.wait_for(f"{first} Running", lambda: bound(twin, ns, first, "Running"), timeout=TIMEOUT, interval=0.1)
    t_run = time.monotonic()
    RESULTS["first_pod"] = {"device": "/".join(device), "node": pod["spec"]["nodeName"],
                            "memory": devices[device]["capacity"]["memory"]["value"],
                            "create_to_allocated_s": round(t_alloc - t0, 2), "create_to_bound_s": round(t_bind - t0, 2),
                            "create_to_running_s": round(t_run - t0, 2)}

    # The second pod: only the H200 qualifies and it is taken, so it waits although the L4 are free.
    t1 = create(second)

    def unschedulable():
        pod, _claim = pod_claim(twin, ledger, ns, second)
        cond = condition(pod, "PodScheduled")
        return cond if cond and cond["status"] == "False" and cond.get("reason") == "Unschedulable" else None

    cond = twin.wait_for(f"{second} Unschedulable", unschedulable, timeout=TIMEOUT, interval=0.1)
    RESULTS["second_pod_unschedulable_after_s"] = round(time.monotonic() - t1, 2)
    RESULTS["second_pod_pending_message"] = cond["message"]
    time.sleep(5)  # and it stays so
    pod, claim2 = pod_claim(twin, ledger, ns, second)
    assert not pod["spec"].get("nodeName") and pod["status"].get("phase") == "Pending", pod["status"]
    assert claim2 is not None and not allocation_results(claim2), claim2
    assert "cannot allocate all claims" in cond["message"], cond["message"]
    assert ledger.allocated_pools() == {"dra-h200-01"}, ledger.seen  # the four L4 are free
    RESULTS["small_devices_free_while_pending"] = ["/".join(k) for k in small]

    # The first pod goes; the second gets the H200.
    t_del = time.monotonic()
    delete_pod(twin, ns, first)
    gone: dict = {}

    def first_gone_then_allocated(name):
        if "t" not in gone and twin.request("GET", f"/api/v1/namespaces/{ns}/pods/{first}", ok=(200, 404)).get(
                "kind") == "Status":
            gone["t"] = time.monotonic()
        return allocated(name)

    _pod, claim2 = twin.wait_for(f"{second}'s claim allocated", lambda: first_gone_then_allocated(second),
                                 timeout=TIMEOUT, interval=0.1)
    t_alloc2 = time.monotonic()
    results = allocation_results(claim2)
    assert [(r["pool"], r["device"]) for r in results] == [device], results
    pod = twin.wait_for(f"{second} Running on {device[0]}", lambda: bound(twin, ns, second, "Running"),
                        timeout=TIMEOUT, interval=0.1)
    t_run2 = time.monotonic()
    assert pod["spec"]["nodeName"] == device[0]
    wait_gone(twin, f"pod {first}", f"/api/v1/namespaces/{ns}/pods/{first}")
    dra_cluster["pods"].remove(first)
    assert claim["metadata"]["name"] not in ledger.claims(), "the first pod's generated claim outlived the pod"
    assert ledger.allocated_pools() == {"dra-h200-01"}, ledger.seen  # no L4 was ever allocated
    assert not ledger.shared, ledger.shared  # and the H200 never went to two claims at once
    RESULTS["second_pod"] = {"device": "/".join(device), "delete_to_allocated_s": round(t_alloc2 - t_del, 2),
                             "delete_to_running_s": round(t_run2 - t_del, 2),
                             "delete_to_first_pod_gone_s": round(gone["t"] - t_del, 2) if gone else None}
    RESULTS["claims_seen"] = {name: sorted("/".join(d) for d in devs) for name, devs in sorted(ledger.seen.items())}
    write_results("dra", RESULTS)
