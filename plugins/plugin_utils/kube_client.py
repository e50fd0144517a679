# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes client of the controller-side plugins (gpushare.cluster.k8s_apply), and
kubernetes.core's lookup the roles read the cluster with: both imported once per run, in
ansible-playbook's own process (preload.py says why)."""

from __future__ import annotations

__all__ = ["IMPORT_ERROR", "AUTH_SPEC", "DynamicApiError", "NotFoundError", "ResourceNotFoundError", "dynamic_client"]

# The connection options of the plugins that use dynamic_client (doc fragment kube_auth).
AUTH_SPEC = dict(kubeconfig=dict(type='path'), context=dict(type='str'))

try:
    from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError
    # The lookup the roles read the cluster with; loaded here for the same reason.
    import ansible_collections.kubernetes.core.plugins.lookup.k8s  # noqa: F401  pylint: disable=unused-import
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    IMPORT_ERROR = None
except ImportError as error:
    IMPORT_ERROR = error
    DynamicApiError = NotFoundError = ResourceNotFoundError = Exception


def dynamic_client(kubeconfig=None, context=None):
    """A ``kubernetes.dynamic.DynamicClient`` for the kubeconfig and context given (the
    client's defaults where not), set up as kubernetes.core's modules and lookup set it up."""
    if IMPORT_ERROR:
        raise ImportError("the kubernetes Python client (pip install kubernetes): %s" % IMPORT_ERROR)
    auth = {key: value for key, value in (("kubeconfig", kubeconfig), ("context", context)) if value}
    return get_api_client(**auth).client
