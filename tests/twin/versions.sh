# shellcheck shell=bash disable=SC2034  # sourced; the variables are used by the caller
# Pinned versions of every part of the cluster twin. Sourced by build.sh and up.sh.
# Kubernetes 1.35: Kueue v0.19 recommends 1.34 or newer and its end-to-end tests run on
# 1.34.8, 1.35.5 and 1.36.1 (kueue hack/make/test.mk). 1.35.5 was the first choice, but the
# module proxy reachable here cannot verify k8s.io/mount-utils@v0.35.5 ("reading
# https://proxy.golang.org/sumdb/sum.golang.org/lookup/k8s.io/mount-utils@v0.35.5: 404 Not
# Found"), while every staging module at v0.35.4 downloads and verifies.
TWIN_KUBE_VERSION=v1.35.4
TWIN_KUBE_STAGING_VERSION=v0.35.4     # k8s.io/* staging modules published for v1.35.4
TWIN_ETCD_VERSION=v3.6.16
TWIN_KWOK_VERSION=v0.8.0
TWIN_KUEUE_VERSION=v0.19.2
TWIN_GO_MIN=go1.26                    # etcd, kwok and kueue declare go 1.26.0
TWIN_HELM_VERSION=v4.3.2             # helm.sh/helm/v4: the client kubernetes.core.helm drives
# prometheus-operator CRDs only (ServiceMonitor, PrometheusRule): no operator runs in the twin.
TWIN_PROMETHEUS_OPERATOR_VERSION=v0.85.0
# The kubeadm test's node containers (tests/kubeadm): CoreDNS, the release the module proxy serves.
TWIN_COREDNS_VERSION=v1.15.0
