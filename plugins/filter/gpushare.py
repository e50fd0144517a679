# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's public filters: what a user may call in a playbook of their own, each
documented for ``ansible-doc -t filter`` with a working example (FILTER_EXAMPLES below;
tests/unit/plugins/filter/test_filter_examples.py runs every one).

- the Helm values and objects the roles install, rendered from the Plan, for installing the
  charts another way (a GitOps repository, a Helm run of your own): ``gpu_operator_values``,
  ``dra_driver_values``, ``kueue_values``, ``kueue_manager_config_yaml``,
  ``kube_prometheus_values``, ``monitoring_objects``;
- ``inventory_nodes``: the ``nodes`` option of the plan and usage_advisor modules from the
  inventory; ``node_name``: the Kubernetes node name the Plan gives an inventory host.

The roles' own steps are filters too, in the files of this folder whose names start with
``__`` (``__gpu_stack.py``, ``__kubeadm.py``, ``__host_prep.py``, ``__awx.py``): ansible-doc
does not list them and they are not the collection's API (docs/architecture.md, "Public
surface"). Each filter is a pure Python function of ``plugins/module_utils/`` computed on the
controller, changing nothing; arguments pass through a JSON round trip (json_filter).
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import model
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config, render_helm, render_monitoring
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import json_filter

# filter name -> function of module_utils
FUNCTIONS = {
    "gpu_operator_values": render_helm.gpu_operator_values,
    "dra_driver_values": render_helm.dra_driver_values,
    "kueue_values": render_helm.kueue_values,
    "kueue_manager_config_yaml": kueue_config.kueue_manager_config_yaml,
    "kube_prometheus_values": render_helm.kube_prometheus_values,
    "monitoring_objects": render_monitoring.monitoring_objects,
    "node_name": model.node_name,
}

# The plan every example below starts from: the plan module's result, as playbooks/plan.yml
# registers it.
_PLAN = """\
# gpushare_plan: registered by the plan module, e.g.
#   - gpushare.cluster.plan: {}
#     register: gpushare_plan
"""

# filter name -> its EXAMPLES for ansible-doc: Ansible tasks, whose variables other than
# gpushare_plan, hostvars and groups are set in the example itself. Not named EXAMPLES:
# ansible-doc would read that as this file's own documentation.
FILTER_EXAMPLES = {
    "gpu_operator_values": _PLAN + """\
- name: The GPU Operator chart's values for a Helm release of your own
  ansible.builtin.copy:
    dest: "{{ playbook_dir }}/gpu-operator-values.yml"
    mode: "0644"
    content: "{{ gpushare_plan.plan | gpushare.cluster.gpu_operator_values | to_nice_yaml }}"

- name: The same for chart v26.7.0 on a host whose kubelet keeps its files elsewhere, without NFD
  ansible.builtin.debug:
    msg: >-
      {{ gpushare_plan.plan | gpushare.cluster.gpu_operator_values({'kubelet_root_dir': '/data/kubelet'},
                                                                   'v26.7.0', true, false) }}
""",
    "dra_driver_values": _PLAN + """\
- name: The NVIDIA DRA driver chart's values (a plan whose inventory has a DRA server)
  ansible.builtin.debug:
    msg: "{{ gpushare_plan.plan | gpushare.cluster.dra_driver_values }}"
  when: gpushare_plan.plan.dra.nodes | default([]) | length > 0
""",
    "kueue_values": _PLAN + """\
- name: The Kueue chart's values, with its metrics scraped by Prometheus in namespace monitoring
  ansible.builtin.debug:
    msg: "{{ gpushare_plan.plan | gpushare.cluster.kueue_values(none, true, 'monitoring') }}"
""",
    "kueue_manager_config_yaml": _PLAN + """\
- name: The Kueue manager's Configuration, as the controller reads it
  ansible.builtin.copy:
    dest: "{{ playbook_dir }}/kueue-controller-manager-config.yaml"
    mode: "0644"
    content: "{{ gpushare_plan.plan | gpushare.cluster.kueue_manager_config_yaml }}"
""",
    "kube_prometheus_values": _PLAN + """\
- name: The kube-prometheus-stack chart's values, keeping 15 days of metrics
  ansible.builtin.debug:
    msg: "{{ gpushare_plan.plan | gpushare.cluster.kube_prometheus_values('grafana-admin', none, none, '15d') }}"
""",
    "monitoring_objects": _PLAN + """\
- name: The PrometheusRule and the team dashboard, alerting after 30 minutes in a queue
  ansible.builtin.debug:
    msg: "{{ gpushare_plan.plan | gpushare.cluster.monitoring_objects('monitoring', 'auto', 1800) }}"
""",
    "node_name": """\
- name: The Kubernetes node name of GPU01.example.com (gpu01)
  ansible.builtin.debug:
    msg: "{{ 'GPU01.example.com' | gpushare.cluster.node_name }}"
""",
    "inventory_nodes": """\
- name: Each GPU server of the inventory with its gpushare_node, for the plan module's nodes option
  ansible.builtin.debug:
    msg: "{{ groups['gpushare_gpu_nodes'] | gpushare.cluster.inventory_nodes(hostvars) }}"
""",
}


def inventory_nodes(hosts, hostvars):
    """Each inventory host with its ``gpushare_node``, for the ``nodes`` option of the plan and usage_advisor modules.

    A host without a ``gpushare_node`` maps to None, so the planner reports it with its
    inventory path (``map(attribute=..., default=none)`` raises a template error on
    ansible-core 2.19's host variables instead).

    Args:
        hosts: inventory host names, a list (e.g. ``groups['gpushare_gpu_nodes']``).
        hostvars: Ansible's ``hostvars``.

    Returns:
        Host name to its ``gpushare_node`` (a dict), or None where the host has none, a dict.
    """
    return {host: hostvars[host].get("gpushare_node") for host in hosts}


class FilterModule:
    """The public filters: FUNCTIONS and inventory_nodes."""

    def filters(self):
        """Filter name to filter function."""
        filters = {name: json_filter(name, function) for name, function in FUNCTIONS.items()}
        filters["inventory_nodes"] = inventory_nodes
        return filters
