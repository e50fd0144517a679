# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MultiKueue objects, from the manager's Plan (planners/multikueue.py).

Kueue v0.19 (docs tasks/manage/setup_multikueue.md, concepts/multikueue.md; API
apis/kueue/v1beta2/multikueue_types.go, admissioncheck_types.go):

* manager: one MultiKueueCluster per worker, its kubeconfig in a Secret of Kueue's
  namespace under the key ``kubeconfig``; a MultiKueueConfig listing them; an
  AdmissionCheck with controllerName ``kueue.x-k8s.io/multikueue`` pointing to it;
* each worker: the ServiceAccount the manager acts as, allowed to create, watch and delete
  every job kind with a MultiKueue adapter and Kueue's Workloads (a kind missing shows as
  ``ClientConnectionFailed: ... is forbidden`` on the MultiKueueCluster), and its long-lived
  token Secret;
* the kubeconfig: server, the worker's CA and the token, embedded (Kueue refuses a CA or
  token given as a file path, and skipping TLS, as an insecure kubeconfig).

The kubeconfig Secret is made on the controller from what the worker returns and sent to
the manager; it is never written to a file.
"""

from __future__ import annotations

import base64
import json

from ansible_collections.gpushare.cluster.plugins.module_utils import names

API = "kueue.x-k8s.io/v1beta2"
RBAC_API = "rbac.authorization.k8s.io/v1"
API_GROUP, RBAC_API_GROUP = (api.split("/", maxsplit=1)[0] for api in (API, RBAC_API))
# The Secret key MultiKueue reads a worker's kubeconfig from (another key: BadKubeConfig).
KUBECONFIG_KEY = "kubeconfig"
# Kinds with a MultiKueue adapter in Kueue v0.19.2 (pkg/controller/jobs/*: MultiKueueAdapter),
# as (API group, resources), and Kueue's own Workloads.
ADAPTER_RESOURCES = (
    ("batch", ("jobs",)),
    ("", ("pods",)),
    ("apps", ("statefulsets",)),
    ("jobset.x-k8s.io", ("jobsets",)),
    ("kubeflow.org", ("jaxjobs", "mpijobs", "paddlejobs", "pytorchjobs", "tfjobs", "xgboostjobs")),
    ("ray.io", ("rayclusters", "rayjobs", "rayservices")),
    ("trainer.kubeflow.org", ("trainjobs",)),
    ("leaderworkerset.x-k8s.io", ("leaderworkersets",)),
    ("workload.codeflare.dev", ("appwrappers",)),
)
OBJECT_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _meta(name: str, namespace: str | None = None) -> dict:
    meta = {"name": name, "labels": dict(names.MANAGED_LABEL)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def kubeconfig_secret_name(worker: str) -> str:
    """The manager's Secret holding worker ``worker``'s kubeconfig."""
    return "%s-%s" % (names.MULTIKUEUE_NAME, worker)


def manager_objects(plan: dict, namespace: str = names.KUEUE_NAMESPACE) -> list[dict]:
    """MultiKueueClusters, the MultiKueueConfig and the AdmissionCheck of the manager's Plan,
    in the order they refer to each other (the kubeconfig Secrets come from kubeconfig_secret)."""
    workers = [w["name"] for w in plan["multikueue"]["workers"]]
    objects = [{"apiVersion": API, "kind": "MultiKueueCluster", "metadata": _meta(w),
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                          "location": kubeconfig_secret_name(w)}}}}
               for w in workers]
    objects.append({"apiVersion": API, "kind": "MultiKueueConfig", "metadata": _meta(names.MULTIKUEUE_NAME),
                    "spec": {"clusters": workers}})
    objects.append({"apiVersion": API, "kind": "AdmissionCheck", "metadata": _meta(plan["multikueue"]["admission_check"]),
                    "spec": {"controllerName": names.MULTIKUEUE_CONTROLLER,
                             "parameters": {"apiGroup": API_GROUP, "kind": "MultiKueueConfig",
                                            "name": names.MULTIKUEUE_NAME}}})
    return objects


def worker_access_objects(namespace: str = names.KUEUE_NAMESPACE) -> list[dict]:
    """What each worker needs so that the manager can dispatch to it: a ServiceAccount in
    Kueue's namespace, a ClusterRole over the adapter kinds and Workloads, the binding, and
    the ServiceAccount's long-lived token Secret."""
    rules = []
    for group, resources in ADAPTER_RESOURCES:
        rules.append({"apiGroups": [group], "resources": list(resources), "verbs": list(OBJECT_VERBS)})
        rules.append({"apiGroups": [group], "resources": ["%s/status" % r for r in resources], "verbs": ["get"]})
    rules.append({"apiGroups": [API_GROUP], "resources": ["workloads"], "verbs": list(OBJECT_VERBS)})
    rules.append({"apiGroups": [API_GROUP], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]})
    token = _meta(names.MULTIKUEUE_TOKEN_SECRET, namespace)
    token["annotations"] = {names.SERVICE_ACCOUNT_NAME_ANNOTATION: names.MULTIKUEUE_NAME}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(names.MULTIKUEUE_NAME, namespace)},
        {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": _meta(names.MULTIKUEUE_NAME), "rules": rules},
        {"apiVersion": RBAC_API, "kind": "ClusterRoleBinding", "metadata": _meta(names.MULTIKUEUE_NAME),
         "roleRef": {"apiGroup": RBAC_API_GROUP, "kind": "ClusterRole", "name": names.MULTIKUEUE_NAME},
         "subjects": [{"kind": "ServiceAccount", "name": names.MULTIKUEUE_NAME, "namespace": namespace}]},
        {"apiVersion": "v1", "kind": "Secret", "type": names.SERVICE_ACCOUNT_TOKEN_TYPE, "metadata": token},
    ]


def kubeconfig_server(kubeconfig: dict, context: str | None = None) -> str:
    """The API server address of a kubeconfig's context (the current one by default)."""
    name = context or kubeconfig.get("current-context")
    ctx = next((c["context"] for c in kubeconfig.get("contexts") or [] if c.get("name") == name), None)
    if ctx is None:
        raise ValueError("the kubeconfig has no context %r" % name)
    cluster = next((c["cluster"] for c in kubeconfig.get("clusters") or [] if c.get("name") == ctx.get("cluster")), None)
    if not cluster or not cluster.get("server"):
        raise ValueError("the kubeconfig's context %r names no cluster with a server" % name)
    return cluster["server"]


def kubeconfig_secret(token_secret: dict, worker: dict, admin_kubeconfig: dict,
                      namespace: str = names.KUEUE_NAMESPACE) -> dict:
    """The manager's Secret with the kubeconfig MultiKueue uses to reach a worker.

    Kueue reads it from the key ``kubeconfig`` and wants everything embedded: the server, the
    worker's CA and the ServiceAccount's token (setup_multikueue.md). Nothing is written to disk.

    Args:
        token_secret: the worker's ServiceAccount token Secret as read from the worker, a dict
            whose ``data`` holds ``token`` and ``ca.crt`` (base64, as the API returns them).
        worker: the worker of the manager's Plan (``plan.multikueue.workers[i]``), a dict with
            ``name``, ``server`` (None: the admin kubeconfig's) and ``context``.
        admin_kubeconfig: the worker's admin kubeconfig the roles use, parsed, a dict (its
            server is the default address).
        namespace: Kueue's namespace on the manager, a string.

    Returns:
        The Secret, a dict (``data.kubeconfig`` base64-encoded).
    """
    data = token_secret.get("data") or {}
    if not data.get("token") or not data.get("ca.crt"):
        raise ValueError("the token Secret %s of worker %s has no token or ca.crt yet"
                         % (names.MULTIKUEUE_TOKEN_SECRET, worker["name"]))
    server = worker.get("server") or kubeconfig_server(admin_kubeconfig, worker.get("context"))
    user = names.MULTIKUEUE_NAME
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": worker["name"], "cluster": {"server": server, "certificate-authority-data": data["ca.crt"]}}],
        "users": [{"name": user, "user": {"token": base64.b64decode(data["token"]).decode()}}],
        "contexts": [{"name": worker["name"], "context": {"cluster": worker["name"], "user": user}}],
        "current-context": worker["name"],
    }
    # JSON is YAML: one deterministic text, so a rerun sends the same bytes and changes nothing.
    text = json.dumps(config, sort_keys=True)
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(kubeconfig_secret_name(worker["name"]), namespace),
            "data": {KUBECONFIG_KEY: base64.b64encode(text.encode()).decode()}}
