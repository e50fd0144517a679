"""The Plan for each example inventory: what the NVIDIA components will be told and will advertise."""

from __future__ import annotations

import json

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_manifests, render_report, render_svg
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.mig_geometry import feasible
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import PLAN_FORMAT, build_plan

from inventories import EXAMPLE_NAMES, example_day, load_example

MIG_PARTED_KEYS = {"device-filter", "devices", "mig-enabled", "mig-devices"}


@pytest.fixture(scope="module")
def day():
    return build_plan(example_day())


def test_the_example_day_split(day):
    node = day["nodes"][0]
    assert [g["mode"] for g in node["gpus"]] == ["whole", "mig", "timeslice", "whole"]
    assert [g["team"] for g in node["gpus"]] == ["production", "production", "data-science", "training"]
    slices = {s["workload"]: s["profile"] for s in node["gpus"][1]["mig"]["slices"] if s["workload"]}
    assert slices == {"embeddings": "1g.18gb", "classifier": "1g.18gb", "speech-to-text": "1g.35gb"}
    labels = dict(node["labels"])
    mig_config = labels.pop("nvidia.com/mig.config")
    assert labels == {"gpushare.cluster/gpu-model": "h200-141gb", "nvidia.com/device-plugin.config": "gpushare-gpu01"}
    assert mig_config == node["mig_config"]["name"] and mig_config.startswith("gpushare-gpu01-")


def test_a_mig_config_is_named_by_its_layout():
    """The MIG Manager never re-reads a config it applied (NVIDIA/mig-parted#108): another
    layout of a node gets another name, the same layout the same name, within 63 characters."""
    variables = example_day()
    day = build_plan(variables)
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] != "classifier"]
    variables["gpushare_policy"]["mig_leftover"] = "leave"
    fewer = build_plan(variables)
    assert day["nodes"][0]["gpus"][1]["mig"]["profiles"] != fewer["nodes"][0]["gpus"][1]["mig"]["profiles"]
    assert day["nodes"][0]["mig_config"]["name"] != fewer["nodes"][0]["mig_config"]["name"]
    assert build_plan(example_day())["nodes"][0]["mig_config"]["name"] == day["nodes"][0]["mig_config"]["name"]
    variables = example_day()
    variables["gpushare_nodes"]["n" * 63] = variables["gpushare_nodes"].pop("gpu01")
    long_name = build_plan(variables)["nodes"][0]["mig_config"]["name"]
    assert len(long_name) <= 63 and long_name.startswith("gpushare-nnn")


def test_one_card_is_time_sliced_while_its_neighbours_stay_whole_and_mig(day):
    # The device plugin time-slices per resource name, not per GPU: GPU 2 becomes one
    # full-size MIG instance whose resource is time-sliced.
    node = day["nodes"][0]
    ts = node["gpus"][2]
    assert ts["mig"]["profiles"] == {"7g.141gb": 1} and ts["realised_as"] == "mig-full-instance"
    config = node["device_plugin_config"]["config"]
    assert config == {"version": "v1", "flags": {"migStrategy": "mixed"}, "sharing": {"timeSlicing": {
        "renameByDefault": True, "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/mig-7g.141gb", "replicas": 5}]}}}
    assert node["advertised"] == {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.18gb": 2, "nvidia.com/mig-1g.35gb": 1,
                                  "nvidia.com/mig-4g.71gb": 1, "nvidia.com/mig-7g.141gb.shared": 5}
    # No other GPU on the node may then use the full-size profile.
    assert "7g.141gb" not in node["gpus"][1]["mig"]["profiles"]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_example_plans_and_every_layout_is_placement_feasible(example):
    plan = build_plan(load_example(example))
    assert plan["format"] == PLAN_FORMAT
    for node in plan["nodes"] + [n for w in plan["windows"] for n in w["nodes"]]:
        model = CATALOG[node["model"]]
        for gpu in node["gpus"]:
            if gpu["mig"]:
                assert feasible(model, gpu["mig"]["profiles"])
                cells = [c for s in gpu["mig"]["slices"] for c in range(s["start"], s["start"] + s["size"])]
                assert len(cells) == len(set(cells))
        if node["mig_config"]:
            assert node["labels"]["nvidia.com/mig.config"] == node["mig_config"]["name"]
            for entry in node["mig_config"]["config"]:
                assert set(entry) <= MIG_PARTED_KEYS
                assert entry["mig-enabled"] == ("mig-devices" in entry)
            covered = sorted(i for e in node["mig_config"]["config"] for i in e["devices"])
            assert covered == list(range(node["gpu_count"]))
        elif all(g["mode"] == "mig-dynamic" for g in node["gpus"]):
            # The DRA driver makes the slices: no layout, and the MIG Manager kept off the node.
            assert node["labels"]["nvidia.com/gpu.deploy.mig-manager"] == "false"
            assert "nvidia.com/mig.config" not in node["labels"]
        else:
            assert not model.mig_capable and "nvidia.com/mig.config" not in node["labels"]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_mig_replica_has_a_slice_that_holds_it(example):
    plan = build_plan(load_example(example))
    inventory = load_example(example)
    needs = {w["name"]: w.get("memory_gib", 0) * 1024 for w in inventory["gpushare_workloads"]}
    for w in plan["workloads"]:
        if w["sharing"] != "mig":
            continue
        assert len(w["slices"]) == w["replicas"]
        for s in w["slices"]:
            node = next(n for n in plan["nodes"] if n["name"] == s["node"])
            assert CATALOG[node["model"]].profile(s["profile"]).memory_mib >= needs[w["name"]]


def test_plan_is_deterministic_and_json_serialisable(day):
    again = build_plan(example_day())
    assert json.dumps(day, sort_keys=True) == json.dumps(again, sort_keys=True)


def test_auto_gpus_become_mig_only_where_needed_and_whole_otherwise():
    plan = build_plan(load_example("mixed-fleet"))
    a100 = next(n for n in plan["nodes"] if n["name"] == "a100-01")
    modes = [g["mode"] for g in a100["gpus"]]
    assert modes[0] == "mig" and modes[7] == "whole"
    assert modes.count("mig") == 4
    # a100-02 keeps its hand-written layout, filled first, and its production GPUs whole.
    a100b = next(n for n in plan["nodes"] if n["name"] == "a100-02")
    assert a100b["gpus"][2]["mig"]["profiles"] == {"3g.40gb": 2}
    assert all(s["workload"] in ("ocr", "asr") for s in a100b["gpus"][2]["mig"]["slices"])
    assert [g["mode"] for g in a100b["gpus"][:2]] == ["whole", "whole"]


def test_time_slicing_a_whole_server_without_mig():
    plan = build_plan(load_example("mixed-fleet"))
    l40s = next(n for n in plan["nodes"] if n["name"] == "l40s-01")
    assert l40s["advertised"] == {"nvidia.com/gpu.shared": 16}
    assert l40s["device_plugin_config"]["config"]["flags"] == {"migStrategy": "none"}
    assert l40s["mig_config"] is None


def test_dra_nodes_have_no_device_plugin_and_claims_select_by_memory():
    plan = build_plan(load_example("mixed-fleet"))
    h200 = next(n for n in plan["nodes"] if n["name"] == "h200-01")
    assert h200["labels"]["nvidia.com/dra-kubelet-plugin"] == "true"
    assert h200["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert h200["device_plugin_config"] is None and h200["advertised"] == {}
    (claim,) = plan["dra"]["claim_templates"]
    assert claim["apiVersion"] == "resource.k8s.io/v1" and claim["metadata"]["namespace"] == "research"
    request = claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["deviceClassName"] == "gpu.nvidia.com"
    assert request["selectors"][0]["cel"]["expression"] == (
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('120Gi')) >= 0")


def test_host_driver_nodes_opt_out_of_the_operator_driver():
    plan = build_plan(load_example("mixed-fleet"))
    a100 = next(n for n in plan["nodes"] if n["name"] == "a100-01")
    assert a100["labels"]["nvidia.com/gpu.deploy.driver"] == "false"


def test_manifests_hold_every_config_the_node_labels_name(day):
    stages = render_manifests.render(day)
    mig_cm, dp_cm = stages["gpu_operator"]
    mig_doc = yaml.safe_load(mig_cm["data"]["config.yaml"])
    assert mig_doc["version"] == "v1"
    names = {n["labels"].get("nvidia.com/mig.config") for n in day["nodes"] + day["windows"][0]["nodes"]}
    assert names <= set(mig_doc["mig-configs"])
    dp_names = {n["labels"]["nvidia.com/device-plugin.config"] for n in day["nodes"] + day["windows"][0]["nodes"]}
    assert dp_names | {"default"} == set(dp_cm["data"])
    assert mig_cm["metadata"]["namespace"] == "gpu-operator"
    files = {f["path"] for f in render_manifests.manifest_files(day)}
    assert {"00-namespaces.yaml", "10-gpu-operator.yaml", "20-node-labels.yaml", "40-kueue.yaml",
            "kueue-configuration.yaml", "windows/night.yaml"} <= files
    for f in render_manifests.manifest_files(day):
        assert all(doc for doc in yaml.safe_load_all(f["content"]))


def test_report_and_picture(day):
    table = "\n".join(render_report.split_table(day))
    assert "1g.18gb@4 classifier" in table and "time-sliced x5" in table
    assert "[production: reclaims at once]" in table
    report = render_report.report_markdown(day)
    assert "## The day, state by state (times in UTC)" in report and "### Window night (19:00 to 07:00 UTC)" in report
    svg = render_svg.render_svg(day)
    assert svg.startswith("<svg") and svg.count("<rect") > 8 and "speech-to-text" in svg
    import xml.dom.minidom
    xml.dom.minidom.parseString(svg)
