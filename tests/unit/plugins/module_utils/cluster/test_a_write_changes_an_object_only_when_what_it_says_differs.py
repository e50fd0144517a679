# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube_calls.says_the_same: how gpushare.cluster.k8s_apply judges whether a write changed an
object (the object read before it against the one the API server returned)."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.cluster.kube_calls import object_name, says_the_same


def test_a_reapply_that_only_rewrote_bookkeeping_says_the_same():
    """As a twin's API server answered the second run of the kueue role: the policy's managed
    fields re-timed and re-sorted, its resourceVersion bumped, nothing else."""
    entry = {"manager": "gpushare", "operation": "Apply", "time": "2026-12-02T11:24:14Z"}
    status = {"manager": "validatingadmissionpolicy-status", "subresource": "status", "time": "2026-12-02T11:24:15Z"}
    before_meta = {"name": "p", "managedFields": [entry, status], "resourceVersion": "321", "generation": 1}
    after_meta = {"name": "p", "resourceVersion": "343", "generation": 1,
                  "managedFields": [status, dict(entry, time="2026-12-02T11:24:24Z")]}
    before = {"kind": "ValidatingAdmissionPolicy", "metadata": before_meta,
              "spec": {"failurePolicy": "Fail"}, "status": {"observedGeneration": 1}}
    after = {"kind": "ValidatingAdmissionPolicy", "metadata": after_meta,
             "spec": {"failurePolicy": "Fail"}, "status": {"observedGeneration": 1, "typeChecking": {}}}
    assert says_the_same(before, after)


def test_a_quantity_spelt_as_text_or_number_says_the_same():
    # Kueue's webhook stored a new ClusterQueue's quota as "1"; the next apply says 1.
    assert says_the_same({"spec": {"nominalQuota": "1"}}, {"spec": {"nominalQuota": 1}})
    assert not says_the_same({"spec": {"nominalQuota": "1"}}, {"spec": {"nominalQuota": 2}})


def test_a_new_quota_a_new_label_or_a_removed_label_is_a_change():
    cq = {"kind": "ClusterQueue", "metadata": {"name": "training", "generation": 1},
          "spec": {"resourceGroups": [{"flavors": [{"name": "whole", "resources": [{"nominalQuota": 1}]}]}]}}
    night = {"kind": "ClusterQueue", "metadata": {"name": "training", "generation": 2},
             "spec": {"resourceGroups": [{"flavors": [{"name": "whole", "resources": [{"nominalQuota": 2}]}]}]}}
    assert not says_the_same(cq, night)
    plain = {"kind": "Namespace", "metadata": {"name": "training", "labels": {}}}
    labelled = {"kind": "Namespace", "metadata": {"name": "training", "labels": {"a": "b"}}}
    assert not says_the_same(plain, labelled)
    assert not says_the_same(labelled, plain)
    # A key present on one side only (a field the apply no longer sets) is a change too.
    assert not says_the_same({"spec": {"a": 1, "b": None}}, {"spec": {"a": 1}})


def test_object_name_is_kind_namespace_name():
    assert object_name({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}) == "ConfigMap/n/c"
    assert object_name({"kind": "ClusterQueue", "metadata": {"name": "training"}}) == "ClusterQueue//training"
    assert object_name({"kind": "Node", "metadata": {"name": "gpu01", "namespace": None}}) == "Node//gpu01"
