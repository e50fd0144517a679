"""The GPU stack roles' side of the renderers: argument specs in step with defaults, the
DRA layout hash, and the checker that
tests/suites/35-site-check.sh runs on what site.yml rendered:

    python tests/unit/test_roles_render.py EXAMPLE RENDERED_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT / ".collections", Path(__file__).resolve().parent):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import yaml  # noqa: E402

from ansible_collections.gpushare.cluster.plugins.module_utils import names  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import prune  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config, render_helm, render_monitoring  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import render  # noqa: E402
from inventories import load_example  # noqa: E402

ROLES = ("gpu_operator", "dra_driver", "kueue", "monitoring")


# --- checker used by the suite ---------------------------------------------------------

def _docs(path: Path) -> list:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def check_rendered(example: str, rendered: Path) -> list[str]:
    """Problems with what the roles rendered for an example inventory (empty = fine)."""
    plan = build_plan(load_example(example))
    manifests = render(plan)
    problems = []

    def need(cond, msg):
        if not cond:
            problems.append(msg)

    def keys(objs):
        return sorted(prune.object_key(o) for o in objs)

    for role in ROLES:
        if role == "dra_driver" and not render_helm.dra_nodes(plan):
            need(not (rendered / role).exists(), "dra_driver rendered though the plan has no DRA nodes")
            continue
        need((rendered / role / "values.yaml").is_file(), "%s/values.yaml missing" % role)
    if problems:
        return problems

    gpu = yaml.safe_load((rendered / "gpu_operator/values.yaml").read_text())
    need(gpu == render_helm.gpu_operator_values(plan), "gpu_operator values differ from render_helm's")
    need(gpu["migManager"]["config"]["name"] == "gpushare-mig-config", "migManager.config.name")
    need(gpu["devicePlugin"]["config"]["name"] == "gpushare-device-plugin-config", "devicePlugin.config.name")
    need(gpu["dcgmExporter"]["serviceMonitor"]["honorLabels"] is True, "dcgm honorLabels")
    need(keys(_docs(rendered / "gpu_operator/configmaps.yaml")) == keys(manifests["gpu_operator"]), "gpu_operator ConfigMaps")
    need(_docs(rendered / "gpu_operator/node-labels.yaml") == manifests["node_labels"], "node labels")
    dp = yaml.safe_load((rendered / "gpu_operator/device-plugin-restart.yaml").read_text())
    cm = next(o for o in manifests["gpu_operator"] if o["metadata"]["name"] == "gpushare-device-plugin-config")
    need(dp["value"] == render_helm.config_hash(cm["data"]), "device plugin config hash")
    if plan["cluster"]["kubernetes_distribution"] == "microk8s":
        need({e["name"] for e in gpu["toolkit"].get("env", [])} ==
             {"CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG_SOURCE",
              "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"}, "microk8s toolkit env")

    if render_helm.dra_nodes(plan):
        dra = yaml.safe_load((rendered / "dra_driver/values.yaml").read_text())
        need(dra == render_helm.dra_driver_values(plan), "dra_driver values differ")
        rct = [d for d in _docs(rendered / "dra_driver/resourceclaimtemplates.yaml") if d["kind"] == "ResourceClaimTemplate"]
        need(keys(rct) == keys(manifests["dra_driver"]), "ResourceClaimTemplates")

    kueue = yaml.safe_load((rendered / "kueue/values.yaml").read_text())
    config = yaml.safe_load(kueue["managerConfig"]["controllerManagerConfigYaml"])
    need(config == kueue_config.kueue_manager_config(plan), "Kueue manager config differs")
    need(yaml.safe_load((rendered / "kueue/controller_manager_config.yaml").read_text()) == config,
         "controller_manager_config.yaml differs from the chart value")
    need(keys(_docs(rendered / "kueue/kueue-objects.yaml")) == keys(manifests["kueue"]), "Kueue objects")
    need(keys(_docs(rendered / "kueue/namespaces.yaml")) == keys(manifests["namespaces"]), "namespaces / RoleBindings")
    guards = yaml.safe_load((rendered / "kueue/prune.yaml").read_text())
    need(guards["label_selector"] == "app.kubernetes.io/managed-by=gpushare.cluster", "prune label selector")
    need(guards["keep_window_flavors"] == prune.window_flavors(plan), "window flavors kept")
    # Everything the role applies is pruned when the Plan drops it, namespaces apart.
    applied = {o["kind"] for o in manifests["namespaces"] + manifests["kueue"]} - {"Namespace"}
    need(applied <= set(guards["kinds"]), "kinds applied but never pruned: %s" % sorted(applied - set(guards["kinds"])))

    mon = yaml.safe_load((rendered / "monitoring/values.yaml").read_text())
    need(mon == render_helm.kube_prometheus_values(plan), "kube-prometheus-stack values differ")
    rule = yaml.safe_load((rendered / "monitoring/prometheusrule.yaml").read_text())
    need(rule == render_monitoring.prometheus_rule(plan), "PrometheusRule differs")
    board = json.loads((rendered / "monitoring/gpu-sharing-by-team.json").read_text())
    need(board == render_monitoring.team_dashboard(plan), "dashboard differs")
    secret = yaml.safe_load((rendered / "monitoring/grafana-admin-secret.yaml").read_text())
    need(secret["stringData"]["admin-password"].startswith("<generated"), "a password was rendered")
    for release in ROLES:
        path = rendered / release / "release.yaml"
        if path.exists():
            need(yaml.safe_load(path.read_text()).get("chart_version"), "%s chart version unset" % release)
    return problems


# --- pytest ----------------------------------------------------------------------------

def _spec_and_defaults(role):
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults/main.yml").read_text())
    spec = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())
    return defaults, spec["argument_specs"]["main"]["options"]


def test_argument_specs_match_defaults():
    for role in ROLES:
        defaults, options = _spec_and_defaults(role)
        assert set(defaults) == set(options), role
        for name, value in defaults.items():
            assert name.startswith(role + "_"), name
            assert options[name].get("default") == value, name


def test_chart_versions_pinned_in_names():
    """Each role's chart version defaults to its pin in names.VERSIONS, the one place of versions."""
    pins = {"gpu_operator": ("gpu_operator_chart_version", "gpu-operator"),
            "dra_driver": ("dra_driver_chart_version", "dra-driver-nvidia-gpu"),
            "kueue": ("kueue_chart_version", "kueue"),
            "monitoring": ("monitoring_chart_version", "kube-prometheus-stack")}
    for role, (var, chart) in pins.items():
        assert _spec_and_defaults(role)[0][var] == "{{ '%s' | gpushare.cluster.pinned_version }}" % chart
        assert names.VERSIONS[chart]


def test_dra_layout_hash_changes_with_the_layout():
    plan = build_plan(load_example("mixed-fleet"))
    before = render_helm.dra_mig_layout_hash(plan)
    node = next(n for n in plan["nodes"] if n["dra"])
    node["mig_config"] = {"name": "other", "config": []}
    assert render_helm.dra_mig_layout_hash(plan) != before


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: test_roles_render.py EXAMPLE RENDERED_DIR\n")
        return 2
    problems = check_rendered(argv[0], Path(argv[1]))
    for p in problems:
        print("35-site-check: %s: %s" % (argv[0], p), file=sys.stderr)
    if not problems:
        files = sorted(str(p.relative_to(argv[1])) for p in Path(argv[1]).rglob("*") if p.is_file())
        print("rendered and checked (%d files): %s" % (len(files), ", ".join(files)))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
