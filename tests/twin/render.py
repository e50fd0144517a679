"""Renders the twin's manifests that differ from Kueue's own release layout.

Kueue's release wires its webhooks to a Service (kustomize fills in namespace, name prefix
and CA). The twin has no Service network, so the webhooks point at the Kueue process on
loopback through clientConfig.url, with the twin's CA; everything else (rules, paths,
failure policies, side effects) is kept as Kueue ships it. Only the webhooks of the
integrations the twin enables are kept: a webhook whose handler is not registered would
answer 404 and, with failurePolicy Fail, block every matching request.

usage: render.py webhooks SRC.yaml CA.pem URL OUT.yaml FRAMEWORK...
       render.py rbac RBAC_DIR USER OUT.yaml
"""
import base64
import copy
import sys

import yaml

# Path fragment of each integration's webhook in config/components/webhook/manifests.yaml.
FRAMEWORK_PATHS = {
    "batch/job": "-batch-v1-job",
    "pod": "--v1-pod",
    "deployment": "-apps-v1-deployment",
    "statefulset": "-apps-v1-statefulset",
}
CORE_PATH = "-kueue-x-k8s-io-"
# What config/components/webhook/kustomization.yaml adds to every integration webhook.
EXCLUDED_NAMESPACES = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
         "values": ["kube-system", "kueue-system"]}
    ]
}


def webhooks(src, ca_file, url, out, frameworks):
    with open(ca_file, "rb") as f:
        ca_bundle = base64.b64encode(f.read()).decode()
    wanted = [FRAMEWORK_PATHS[fw] for fw in frameworks]
    docs = []
    with open(src) as f:
        for doc in yaml.safe_load_all(f):
            if not doc:
                continue
            doc = copy.deepcopy(doc)
            doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"]
            kept = []
            for hook in doc["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                core = CORE_PATH in path
                if not core and not any(path.endswith(w) for w in wanted):
                    continue
                hook["clientConfig"] = {"url": url.rstrip("/") + path, "caBundle": ca_bundle}
                if not core:
                    hook["namespaceSelector"] = copy.deepcopy(EXCLUDED_NAMESPACES)
                kept.append(hook)
            doc["webhooks"] = kept
            docs.append(doc)
    with open(out, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)


def rbac(rbac_dir, user, out):
    """Kueue's own ClusterRoles (kustomize prefixes them with kueue-), bound to USER."""
    docs = []
    for name in ("role.yaml", "metrics_auth_role.yaml", "manager_secrets_role.yaml"):
        with open(f"{rbac_dir}/{name}") as f:
            for doc in yaml.safe_load_all(f):
                if not doc:
                    continue
                role = "kueue-" + doc["metadata"]["name"]
                doc["metadata"]["name"] = role
                binding = {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": role},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                "kind": doc["kind"], "name": role},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "User", "name": user}],
                }
                if doc["kind"] == "Role":  # kustomize puts namespace "system" in kueue-system
                    doc["metadata"]["namespace"] = "kueue-system"
                    binding["kind"] = "RoleBinding"
                    binding["metadata"]["namespace"] = "kueue-system"
                docs.extend([doc, binding])
    # The visibility API server delegates authentication like any aggregated server
    # (config/components/visibility/role_binding.yaml).
    docs.append({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "kueue-visibility-server-auth-reader", "namespace": "kube-system"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "extension-apiserver-authentication-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })
    with open(out, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "webhooks":
        webhooks(args[0], args[1], args[2], args[3], args[4:])
    elif cmd == "rbac":
        rbac(*args)
    else:
        sys.exit(f"render.py: unknown command {cmd}")
