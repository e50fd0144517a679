# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes distributions the collection installs: one table, one entry each.

Who reads an entry:

- the planner (``model.py``) accepts ``gpushare_policy.kubernetes_distribution`` only if it names
  an entry; the Plan carries the decision as ``cluster.kubernetes_distribution``;
- ``playbooks/kubernetes.yml`` includes the entry's ``role`` (filter ``distribution``);
- ``roles/host_prep`` opens the ports held by the host_prep variables the entry names;
- the entry's role publishes the fact ``gpushare_distribution`` on each host with
  ``distribution_fact`` (its admin kubeconfig on the controller, the entry's container runtime
  paths, the host's node name) and applies nothing else of another distribution;
- ``playbooks/site.yml`` hands that fact's kubeconfig and runtime paths to the GPU stack roles
  (``plan_fact``: the fact the role recorded in this run, else the same fact computed from the
  entry and the inventory, e.g. for ``--tags kueue``);
- ``render_helm.runtime_paths`` falls back on ``assumed_runtime`` when no paths are passed.

Adding a distribution is an entry here and its role (which sets ``gpushare_distribution`` with
the ``gpushare.cluster.distribution_fact`` filter); no playbook or other role names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible_collections.gpushare.cluster.plugins.module_utils.names import SECRETS_DIR

# The fact each distribution role sets on every host it runs on.
FACT = "gpushare_distribution"
# The keys of a runtime paths mapping (the GPU stack roles' <role>_runtime_paths).
RUNTIME_KEYS = ("containerd_config", "containerd_socket", "runtime_config_source", "containerd_dropin_dir",
                "kubelet_root_dir")


@dataclass(frozen=True)
class Distribution:
    """One Kubernetes distribution and what the rest of the collection needs to know of it."""
    # The value of gpushare_policy.kubernetes_distribution (and the Plan's cluster.kubernetes_distribution).
    name: str
    # gpushare.cluster.<role> installs it on the hosts of gpushare_control_plane and gpushare_gpu_nodes.
    role: str
    # Container runtime paths, RUNTIME_KEYS; "" where the GPU Operator's own default applies.
    runtime: dict
    # True: the paths are the GPU Operator's own defaults, so the GPU stack is passed them only as
    # the role recorded them in this run (a run without the role passes none, the chart's defaults
    # apply); False: the GPU stack always needs them.
    runtime_is_operator_default: bool
    # The role variable holding the admin kubeconfig's path on the controller ...
    kubeconfig_var: str
    # ... and its default: this file name in the artifacts directory, "{var}" being the role
    # variables of kubeconfig_file_vars (with the role's defaults).
    kubeconfig_file: str
    kubeconfig_file_vars: dict = field(default_factory=dict)
    # The host_prep variables holding the firewall ports of every host / of control-plane hosts.
    firewall_ports: tuple = ()
    control_plane_firewall_ports: tuple = ()
    # The role variable that sets the Kubernetes version, and its default (the role's), whose
    # leading "<major>.<minor>" is the minor installed; and the variable taking feature gates.
    version_var: str = ""
    version_default: str = ""
    feature_gates_var: str = ""


# Order: the default first (the planner lists the allowed values in this order).
TABLE = {d.name: d for d in (
    Distribution(
        name="kubeadm",
        role="kubeadm",
        runtime={
            "containerd_config": "/etc/containerd/config.toml",
            "containerd_socket": "/run/containerd/containerd.sock",
            # Empty: the GPU Operator's default (it asks containerd itself) fits kubeadm.
            "runtime_config_source": "",
            "containerd_dropin_dir": "/etc/containerd/conf.d",
            "kubelet_root_dir": "/var/lib/kubelet",
        },
        runtime_is_operator_default=True,
        kubeconfig_var="kubeadm_kubeconfig_local_path",
        kubeconfig_file="{kubeadm_cluster_name}-admin.conf",
        kubeconfig_file_vars={"kubeadm_cluster_name": "gpushare"},
        firewall_ports=("host_prep_firewall_ports_kubeadm_node",),
        control_plane_firewall_ports=("host_prep_firewall_ports_kubeadm_control_plane",),
        version_var="kubeadm_kubernetes_minor",
        version_default="1.35",
        feature_gates_var="kubeadm_feature_gates",
    ),
    # canonical/microk8s microk8s-resources/default-args and the GPU Operator docs
    # (NVIDIA/cloud-native-docs gpu-operator/getting-started.rst, "MicroK8s").
    Distribution(
        name="microk8s",
        role="microk8s",
        runtime={
            "containerd_config": "/var/snap/microk8s/current/args/containerd-template.toml",
            "containerd_socket": "/var/snap/microk8s/common/run/containerd.sock",
            "runtime_config_source": "file=/var/snap/microk8s/current/args/containerd.toml",
            "containerd_dropin_dir": "",
            "kubelet_root_dir": "/var/snap/microk8s/common/var/lib/kubelet",
        },
        runtime_is_operator_default=False,
        kubeconfig_var="microk8s_kubeconfig_local_path",
        kubeconfig_file="microk8s-admin.conf",
        firewall_ports=("host_prep_firewall_ports_microk8s",),
        version_var="microk8s_channel",
        version_default="1.34/stable",
        feature_gates_var="microk8s_feature_gates",
    ),
)}
NAMES = tuple(TABLE)
DEFAULT = "kubeadm"


def entry(name: str) -> Distribution:
    """The table's entry for ``name``; ValueError naming the known ones otherwise."""
    if not isinstance(name, str) or name not in TABLE:
        raise ValueError("%r is not a Kubernetes distribution gpushare.cluster installs; allowed: %s"
                         % (name, ", ".join(NAMES)))
    return TABLE[name]


def names(_unused=None) -> list:
    """The names of the Kubernetes distributions, the default first.

    Args:
        _unused: ignored; pipe ``none`` into the filter (``{{ none | gpushare.cluster.distributions }}``).

    Returns:
        The distribution names of the table, a list of strings (``["kubeadm", "microk8s"]``).
    """
    return list(NAMES)


def describe(name: str) -> dict:
    """A Kubernetes distribution's entry of the distributions table.

    The table is plugins/module_utils/inventory/distributions.py. An unknown name is an error
    that lists the known ones.

    Args:
        name: a distribution name, as ``gpushare_policy.kubernetes_distribution`` (e.g. ``kubeadm``).

    Returns:
        The entry, a dict: name, role, runtime (container runtime paths), runtime_is_operator_default,
        kubeconfig_var, kubeconfig_file, kubeconfig_file_vars, firewall_ports and
        control_plane_firewall_ports (host_prep variable names).
    """
    d = entry(name)
    return {"name": d.name, "role": d.role, "runtime": dict(d.runtime),
            "runtime_is_operator_default": d.runtime_is_operator_default,
            "kubeconfig_var": d.kubeconfig_var, "kubeconfig_file": d.kubeconfig_file,
            "kubeconfig_file_vars": dict(d.kubeconfig_file_vars),
            "firewall_ports": list(d.firewall_ports), "control_plane_firewall_ports": list(d.control_plane_firewall_ports)}


def assumed_runtime(name: str) -> dict:
    """The runtime paths the GPU stack gets when no role recorded any in this run: the entry's
    (empty ones left out), or none when they are the GPU Operator's own defaults."""
    d = entry(name)
    return {} if d.runtime_is_operator_default else {k: v for k, v in d.runtime.items() if v}


def distribution_fact(name: str, kubeconfig: str, node_name: str) -> dict:
    """The fact ``gpushare_distribution`` a distribution role sets on each host.

    Args:
        name: the distribution's name, a key of the distributions table.
        kubeconfig: the admin kubeconfig's path on the controller, a string.
        node_name: this host's Kubernetes node name, a string.

    Returns:
        A dict: name, role, kubeconfig, runtime (the table's container runtime paths) and node_name.
    """
    d = entry(name)
    return {"name": d.name, "role": d.role, "kubeconfig": kubeconfig, "runtime": dict(d.runtime),
            "node_name": node_name}


def host_variables(plan: dict) -> list:
    """The variables of a host ``plan_fact`` reads for the Plan's distribution."""
    d = entry(plan["cluster"]["kubernetes_distribution"])
    return [FACT, d.kubeconfig_var] + list(d.kubeconfig_file_vars)


def plan_fact(plan: dict, host_vars: dict, artifacts_dir: str) -> dict:
    """The fact ``gpushare_distribution`` of the Plan's distribution as seen from a host (the
    first control plane): the one its role recorded there in this run; otherwise the same
    fact computed from the table (no role ran, e.g. ``site.yml --tags kueue``): the kubeconfig
    from the role's variable when the inventory sets it, else the role's default file in
    the secrets directory of ``artifacts_dir``; the runtime paths of ``assumed_runtime``; node_name None (only the role
    pins node names). ``host_vars`` needs only the variables of ``host_variables``."""
    name = plan["cluster"]["kubernetes_distribution"]
    d = entry(name)
    recorded = host_vars.get(FACT)
    if isinstance(recorded, dict) and recorded.get("name") == name:
        return recorded
    if d.kubeconfig_var in host_vars:
        kubeconfig = host_vars[d.kubeconfig_var]
    else:
        file_vars = {k: host_vars.get(k, default) for k, default in d.kubeconfig_file_vars.items()}
        kubeconfig = "%s/%s/%s" % (artifacts_dir, SECRETS_DIR, d.kubeconfig_file.format(**file_vars))
    return {"name": d.name, "role": d.role, "kubeconfig": kubeconfig, "runtime": assumed_runtime(name),
            "node_name": None}


_MINOR = re.compile(r"^v?(\d+)\.(\d+)")


def kubernetes_problems(plan: dict, host_vars: dict) -> list:
    """Why the Kubernetes the Plan's distribution role installs cannot serve the Plan.

    Its minor (the role's version variable in ``host_vars``, else the role's default) below the
    Plan's ``cluster.kubernetes.minimum_minor`` (dynamic MIG needs 1.35).

    Args:
        plan: the plan module's ``plan`` (``cluster.kubernetes_distribution`` and ``cluster.kubernetes``).
        host_vars: variables of the first control-plane host (only the version variable is read).

    Returns:
        The problems, a list of strings, each naming the variable, its value and the fix; empty
        when the Plan needs nothing of Kubernetes.
    """
    needs = plan["cluster"].get("kubernetes") or {}
    if not needs.get("minimum_minor"):
        return []
    d = entry(plan["cluster"]["kubernetes_distribution"])
    value = str(host_vars.get(d.version_var, d.version_default))
    wanted = tuple(int(x) for x in needs["minimum_minor"].split("."))
    match = _MINOR.match(value)
    if match and (int(match.group(1)), int(match.group(2))) >= wanted:
        return []
    fixed = needs["minimum_minor"] + value[match.end():] if match else needs["minimum_minor"]
    return ["%s: %r installs Kubernetes %s, and %s need Kubernetes %s or newer (feature gates %s, which the %s "
            "role sets). Set %s: \"%s\" (or newer) in the inventory, or take the GPUs off mig-dynamic."
            % (d.version_var, value, "%s.%s" % match.groups() if match else "of an unknown minor", needs["why"],
               needs["minimum_minor"], ", ".join(sorted(needs.get("feature_gates", {}))), d.role, d.version_var,
               fixed)]


def kubernetes_feature_gates(plan: dict) -> dict:
    """The feature gates the Plan needs, under the name of its distribution role's variable.

    Args:
        plan: the plan module's ``plan``.

    Returns:
        ``{"kubeadm_feature_gates": {"DRAPartitionableDevices": true}}`` (the role's variable
        and the gates) for playbooks/kubernetes.yml to set on the hosts; empty when none is needed.
    """
    d = entry(plan["cluster"]["kubernetes_distribution"])
    gates = (plan["cluster"].get("kubernetes") or {}).get("feature_gates") or {}
    return {d.feature_gates_var: dict(gates)} if gates and d.feature_gates_var else {}
