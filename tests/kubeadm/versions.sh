# shellcheck shell=bash disable=SC2034  # sourced; the variables are used by the caller
# Versions of the kubeadm test's parts beyond the cluster twin's (tests/twin/versions.sh:
# Kubernetes, etcd). CoreDNS: the release the Go module proxy serves.
KUBEADM_TEST_COREDNS_VERSION=v1.15.0
