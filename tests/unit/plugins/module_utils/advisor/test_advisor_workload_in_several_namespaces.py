# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A workload whose pods run in several namespaces (issue 33, item 11): JupyterHub's
``jupyter-<user>`` pods in data-science and eve's Kubeflow Notebook (StatefulSet ``eve-gpu``) in
her profile namespace ``kubeflow-eve``, both of team data-science. Each pod's owner is looked up in
its own namespace, and the chart is named after every namespace."""

from __future__ import annotations

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import render_advice
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"labels": {"notebook-name": "eve-gpu"}}]}


def test_owners_and_chart_of_a_workload_in_two_namespaces():
    usage, _truth = usage_synth.real_cluster_day(eve_namespace="kubeflow-eve")
    inventory = example_inventory()
    inventory["gpushare_teams"][1]["namespaces"] = ["data-science", "kubeflow-eve"]
    advice = ua.advise(usage, dict(inventory, gpushare_advise_match=MATCH), check=False)
    notebooks = next(s for s in advice["services"] if s["name"] == "notebooks")
    assert notebooks["namespace"] == "data-science"            # four of its five pods
    assert notebooks["namespaces"] == ["data-science", "kubeflow-eve"]
    ident = notebooks["identity"]
    assert ident["pods"] == 5 and ident["rule"] == "match"
    # jupyter-* have no controller; eve-gpu-0 is StatefulSet eve-gpu's, in kubeflow-eve
    assert ident["owners"] == ["<none> <none>", "StatefulSet eve-gpu"]
    assert "kubeflow-eve/eve-gpu-0" in ident["examples"]
    assert render_advice.chart_name(notebooks) == "charts/notebooks.data-science+kubeflow-eve.svg"
    report = render_advice.report_markdown(advice, [], "not checked")
    assert "? ?" not in report
    assert "; in namespaces data-science, kubeflow-eve" in report
    # a service in one namespace keeps its name
    vllm = next(s for s in advice["services"] if s["name"] == "vllm-chat")
    assert "namespaces" not in vllm and render_advice.chart_name(vllm) == "charts/vllm-chat.prod-serving.svg"
