# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ResourceClaimTemplates for workloads that ask for a GPU by its attributes.

The NVIDIA DRA driver publishes each full GPU as a device of DeviceClass
``gpu.nvidia.com`` with capacity ``memory`` = NVML total bytes (kubernetes-sigs/
dra-driver-nvidia-gpu, site/content/docs/reference/resourceslice-attributes.md).
``compareTo(...) >= 0``, as in the Kubernetes DRA documentation, rather than the
``isGreaterThan`` of NVIDIA's examples (strictly greater), so that a card reporting exactly
the requested amount qualifies.
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import DRA
from ansible_collections.gpushare.cluster.plugins.module_utils.names import DRA_DEVICE_CLASS, MANAGED_LABEL

API = "resource.k8s.io/v1"


def memory_selector(min_gib: float) -> str:
    quantity = "%dGi" % min_gib if float(min_gib).is_integer() else "%dMi" % round(min_gib * 1024)
    return "device.capacity['%s'].memory.compareTo(quantity('%s')) >= 0" % (DRA_DEVICE_CLASS, quantity)


def claim_template(workload, namespace: str) -> dict:
    request = {"deviceClassName": DRA_DEVICE_CLASS, "count": workload.gpus}
    if workload.min_memory_gib:
        request["selectors"] = [{"cel": {"expression": memory_selector(workload.min_memory_gib)}}]
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "%s-gpu" % workload.name, "namespace": namespace, "labels": dict(MANAGED_LABEL)},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}},
    }


def plan_claims(workloads, teams) -> list[dict]:
    by_team = {t.name: t for t in teams}
    return [claim_template(w, ns) for w in workloads if w.sharing == DRA
            for ns in sorted(by_team[w.team].namespaces)]
