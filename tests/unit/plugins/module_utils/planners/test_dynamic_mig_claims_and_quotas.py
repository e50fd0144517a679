# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workloads on mig-dynamic GPUs ask by claim, and their teams' quotas are Kueue counter quota.

The expected answers come from the example inventory (static-and-dynamic-mig) worked by hand,
NVIDIA's tables (tests/unit/mig_grid_oracle.py) and the upstream objects: the driver's
ResourceSlice devices and DeviceClass (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1:
cmd/gpu-kubelet-plugin/partitions.go, mig.go; templates/deviceclass-mig.yaml), Kueue's charge
(kubernetes-sigs/kueue v0.19.2 pkg/dra/counters.go: the largest value of the named counter among
the devices that the class, the request and the source select), the resource.k8s.io/v1 API of
Kubernetes 1.35.4 and Kueue's Configuration Go types.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_helm

import cel_subset
from inventories import ROOT, load_example
from kube_openapi import validator
from mig_grid_oracle import H200, brute_force

MIB = 1 << 20
# The mig.nvidia.com DeviceClass of the driver's chart.
MIG_CLASS = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"


def slice_devices() -> list[dict]:
    """One H200 (and one H100 80GB, and the H200 as a whole device) as the kubelet plugin
    publishes them with DynamicMIG: a device per profile and placement, consuming its memory."""
    devices = [{"name": "gpu-0", "driver": "gpu.nvidia.com",
                "attributes": {"gpu.nvidia.com": {"type": "gpu", "productName": "NVIDIA H200"}},
                "consumes": {"memory": 143360 * MIB}}]
    for profile, (_size, starts, mib) in H200.items():
        for start in starts:
            devices.append({"name": "gpu-0-mig-%s-%d" % (profile.replace(".", ""), start), "driver": "gpu.nvidia.com",
                            "attributes": {"gpu.nvidia.com": {"type": "mig", "profile": profile,
                                                              "productName": "NVIDIA H200"}},
                            "consumes": {"memory": mib * MIB}})
    devices.append({"name": "gpu-1-mig-1g20gb-0", "driver": "gpu.nvidia.com",
                    "attributes": {"gpu.nvidia.com": {"type": "mig", "profile": "1g.20gb",
                                                      "productName": "NVIDIA H100 80GB HBM3"}},
                    "consumes": {"memory": 19968 * MIB}})
    return devices


def selects(expression: str, device: dict) -> bool:
    return cel_subset.evaluate(cel_subset.parse(expression), {"device": device})


@pytest.fixture(scope="module", name="plan")
def fixture_plan():
    return build_plan(load_example("static-and-dynamic-mig"))


def templates(plan) -> dict:
    return {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in plan["dra"]["claim_templates"]}


def request(template) -> dict:
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"]


def test_each_workload_gets_its_profile_by_claim(plan):
    """chat needs 30 GiB: 1g.18gb holds 16 GiB; 1g.35gb and 2g.35gb hold 32.25 GiB, 1g.35gb with
    fewer compute slices. embedder needs 14 GiB: 1g.18gb. eval pins 3g.71gb. Each selector takes
    exactly that profile's placements on the H200, nothing of another model or the whole GPU."""
    wanted = {("inference", "chat-1g.35gb"): ("1g.35gb", 4), ("inference", "embedder-1g.18gb"): ("1g.18gb", 7),
              ("research", "eval-3g.71gb"): ("3g.71gb", 2)}
    found = {k: t for k, t in templates(plan).items() if k in wanted}
    assert set(found) == set(wanted)
    for key, (profile, placements) in wanted.items():
        exactly = request(found[key])
        assert exactly["deviceClassName"] == "mig.nvidia.com" and exactly["count"] == 1
        chosen = [d["name"] for d in slice_devices()
                  if selects(MIG_CLASS, d) and all(selects(s["cel"]["expression"], d) for s in exactly["selectors"])]
        assert chosen == ["gpu-0-mig-%s-%d" % (profile.replace(".", ""), s) for s in H200[profile][1]]
        assert len(chosen) == placements
    records = {w["name"]: w for w in plan["workloads"]}
    assert records["chat"]["claim_template"] == "chat-1g.35gb" and records["chat"]["profile"] == "1g.35gb"


def test_kueue_charges_what_the_plan_counts(plan):
    """Kueue's charge: the largest ``memory`` counter among the devices the class, the request's
    selectors and the mapping's source selector all take."""
    mapping = plan["kueue"]["configuration"]["resources"]["deviceClassMappings"][-1]
    source = mapping["sources"][0]["counter"]
    assert (mapping["name"], mapping["deviceClassNames"], source["name"], source["driver"]) == \
        ("gpushare.cluster/mig-memory", ["mig.nvidia.com"], "memory", "gpu.nvidia.com")
    by_hand = {"chat-1g.35gb": 33280, "embedder-1g.18gb": 16384, "eval-3g.71gb": 71424}
    for (_ns, name), template in templates(plan).items():
        exactly = request(template)
        matched = [d for d in slice_devices() if selects(MIG_CLASS, d)
                   and all(selects(s["cel"]["expression"], d) for s in exactly["selectors"])
                   and selects(source["deviceSelector"]["cel"]["expression"], d)]
        assert max(d["consumes"][source["name"]] for d in matched) == by_hand[name] * MIB
        workload = next(w for w in plan["workloads"] if w.get("claim_template") == name)
        assert workload["charge_mib"] == by_hand[name]


def test_claim_templates_pass_the_resource_v1_api():
    check = validator("apis__resource.k8s.io__v1_openapi.json", "io.k8s.api.resource.v1.ResourceClaimTemplate")
    plan = build_plan(load_example("static-and-dynamic-mig"))
    for template in plan["dra"]["claim_templates"]:
        check(template)
    bad = dict(template, spec={"spec": {"devices": {"requests": [{"name": "mig", "exactly": dict(
        request(template), deviceClass="mig.nvidia.com")}]}}})
    with pytest.raises(Exception):
        check(bad)          # the validator refuses a misspelt field


def _go_struct_fields(source: str, name: str) -> set[str]:
    body = source.split("type %s struct {" % name, 1)[1].split("\n}\n", 1)[0]
    return set(re.findall(r'json:"([A-Za-z]+)[,"]', body))


def test_the_mapping_uses_only_fields_of_kueues_configuration(plan):
    run = subprocess.run(["bash", str(ROOT / "tests" / "twin" / "kueue-crds.sh")], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stderr
    source = (Path(run.stdout.strip()).parents[3] / "apis" / "config" / "v1beta2" / "configuration_types.go").read_text()
    mapping = plan["kueue"]["configuration"]["resources"]["deviceClassMappings"][-1]
    assert set(mapping) <= _go_struct_fields(source, "DeviceClassMapping")
    for entry in mapping["sources"]:
        assert set(entry) <= _go_struct_fields(source, "DeviceClassSourceConfig") and len(entry) == 1
        assert set(entry["counter"]) == _go_struct_fields(source, "DeviceClassCounterSource")
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", entry["counter"]["name"])


def test_each_team_gets_its_gpus_share_of_the_guaranteed_quota(plan):
    """Two dynamic H200s, one per team; the workloads' profiles are 1g.18gb, 1g.35gb and
    3g.71gb, so the total is the brute force's quota, and each team's nominal is half of it.
    research borrows at most one GPU's share; production (inference) does not borrow and
    reclaims at once; nothing is left to the cohort."""
    total = brute_force(("1g.18gb", "1g.35gb", "3g.71gb"), 2)[0]
    queues = {o["metadata"]["name"]: o["spec"] for o in plan["kueue"]["objects"] if o["kind"] == "ClusterQueue"}

    def entry(team):
        return next(r for g in queues[team]["resourceGroups"] for f in g["flavors"] for r in f["resources"]
                    if r["name"] == "gpushare.cluster/mig-memory" and f["name"] == "h200-141gb-mig-dynamic")

    assert entry("inference") == {"name": "gpushare.cluster/mig-memory", "nominalQuota": "%dMi" % (total // 2),
                                  "borrowingLimit": 0}
    assert entry("research") == {"name": "gpushare.cluster/mig-memory", "nominalQuota": "%dMi" % (total // 2),
                                 "borrowingLimit": "%dMi" % (total // 2)}
    assert queues["inference"]["preemption"]["reclaimWithinCohort"] == "Any"
    cohort = next(o for o in plan["kueue"]["objects"] if o["kind"] == "Cohort")
    assert "resourceGroups" not in cohort["spec"]
    flavor = next(o for o in plan["kueue"]["objects"] if o["kind"] == "ResourceFlavor"
                  and o["metadata"]["name"] == "h200-141gb-mig-dynamic")
    assert flavor["spec"]["nodeLabels"] == {"gpushare.cluster/gpu-model": "h200-141gb",
                                            "nvidia.com/dra-kubelet-plugin": "true"}


def test_the_plan_says_which_mix_kueue_alone_would_strand(plan):
    """Two H200s hold 14 x 1g.18gb (7 starts each); the 15th does not place, although 15 x 16384
    MiB is less than the 2 x 143360 MiB the memory counters hold."""
    assert any("15 x 1g.18gb" in w and "245760" in w for w in plan["warnings"])


def test_dynamic_gpus_are_left_to_the_dra_driver(plan):
    node = next(n for n in plan["nodes"] if n["name"] == "h200-dynamic")
    assert node["mig_config"] is None and node["device_plugin_config"] is None
    assert node["labels"] == {"gpushare.cluster/gpu-model": "h200-141gb", "nvidia.com/dra-kubelet-plugin": "true",
                              "nvidia.com/gpu.deploy.device-plugin": "false",
                              "nvidia.com/gpu.deploy.mig-manager": "false"}
    assert [g["mode"] for g in node["gpus"]] == ["mig-dynamic", "mig-dynamic"]
    values = render_helm.dra_driver_values(plan)
    assert values["featureGates"] == {"DynamicMIG": True, "MPSSupport": False, "PassthroughSupport": False,
                                      "NVMLDeviceHealthCheck": False}


def test_no_dynamic_gpu_no_gate_and_no_counter_mapping():
    plan = build_plan(load_example("mixed-fleet"))
    assert "featureGates" not in render_helm.dra_driver_values(plan)
    assert all(m["name"] != "gpushare.cluster/mig-memory"
               for m in plan["kueue"]["configuration"]["resources"].get("deviceClassMappings", []))
