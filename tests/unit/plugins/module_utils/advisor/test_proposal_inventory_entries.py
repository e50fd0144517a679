# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proposed inventory entries as they would be written, worked out by hand: workloads
(only what differs from the defaults, in the inventory's order, a DRA request), and each
node's GPUs with one replica count per sharing mode.
"""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal


def test_a_dra_service_becomes_a_device_request_for_its_memory():
    advised = {"name": "chat", "team": "production", "kind": "serving", "sharing": "dra", "memory_gib": 20,
               "replicas": 1, "gpus": 1}
    assert proposal._workload_entry(advised) == {"name": "chat", "team": "production", "kind": "serving",
                                                 "device_request": {"min_memory_gib": 20}}


def test_a_workload_entry_keeps_what_its_sharing_needs():
    base = {"name": "w", "team": "t", "kind": "serving", "memory_gib": 12.5, "mig_profile": "1g.18gb",
            "replicas": 1, "gpus": 1}
    assert proposal._workload_entry({**base, "sharing": "timeslice"}) == {
        "name": "w", "team": "t", "kind": "serving", "sharing": "timeslice"}
    assert proposal._workload_entry({**base, "sharing": "whole"}) == {
        "name": "w", "team": "t", "kind": "serving", "sharing": "whole", "memory_gib": 12.5}
    assert proposal._workload_entry({**base, "sharing": "mig", "gpus": 2, "replicas": 3}) == {
        "name": "w", "team": "t", "kind": "serving", "sharing": "mig", "memory_gib": 12.5, "mig_profile": "1g.18gb",
        "replicas": 3}


# --------------------------------------------------------------------------- entries as they would be written

def _wl(name, sharing, **kw):
    fields = {"team": "t", "kind": "serving", "memory_gib": None, "replicas": 1, "gpus": 1, "gpu_model": None,
              "mig_profile": None, "min_memory_gib": None}
    return SimpleNamespace(name=name, sharing=sharing, **{**fields, **kw})


def test_a_current_workload_is_written_back_with_only_what_differs_from_the_defaults():
    assert proposal._raw_workload(_wl("eval", "dra", min_memory_gib=120, kind="batch")) == {
        "name": "eval", "team": "t", "kind": "batch", "device_request": {"min_memory_gib": 120}}
    assert proposal._raw_workload(_wl("nb", "timeslice", replicas=3)) == {
        "name": "nb", "team": "t", "kind": "serving", "sharing": "timeslice", "replicas": 3}
    assert proposal._raw_workload(_wl("big", "whole", memory_gib=240, gpus=2, gpu_model="h200-141gb")) == {
        "name": "big", "team": "t", "kind": "serving", "sharing": "whole", "memory_gib": 240, "gpus": 2,
        "gpu_model": "h200-141gb"}
    assert proposal._raw_workload(_wl("emb", "mig", memory_gib=12, mig_profile="1g.18gb")) == {
        "name": "emb", "team": "t", "kind": "serving", "sharing": "mig", "memory_gib": 12, "mig_profile": "1g.18gb"}


def test_proposed_workloads_keep_the_inventorys_order_and_name_the_model_of_a_mig_slice_on_a_mixed_fleet():
    inv = SimpleNamespace(workloads=[_wl("b", "whole"), _wl("a", "timeslice", replicas=2), _wl("c", "whole")],
                          nodes=[SimpleNamespace(model="h200-141gb"), SimpleNamespace(model="l40s")])
    ok = {"status": "ok", "team": "t", "kind": "serving", "memory_gib": 10, "replicas": 1, "gpus": 1}
    results = [{**ok, "name": "new", "sharing": "mig", "mig_profile": "1g.18gb", "model": "h200-141gb"},
               {"name": "a", "status": "not_enough_data"},          # current, not advised: kept as it is
               {**ok, "name": "b", "sharing": "whole"},
               {"name": "gone", "status": "not_enough_data"}]       # neither advised nor current: left out
    workloads, advised = proposal._workloads(inv, results)
    assert [w["name"] for w in workloads] == ["b", "a", "new"]      # inventory order (c not in the results), then new
    assert workloads[1] == {"name": "a", "team": "t", "kind": "serving", "sharing": "timeslice", "replicas": 2}
    assert workloads[2]["gpu_model"] == "h200-141gb" and [r["name"] for r in advised] == ["new", "b"]
    inv.nodes = inv.nodes[:1]                                       # one model: no gpu_model needed
    assert "gpu_model" not in proposal._workloads(inv, results)[0][2]


def _gpu(index, mode, team=None, replicas=0, mig_layout=None, windows=()):
    return SimpleNamespace(index=index, mode=mode, team=team, replicas=replicas, mig_layout=mig_layout,
                           windows=windows)


def test_a_nodes_gpus_as_proposed_with_one_replica_count_per_sharing_mode():
    night = SimpleNamespace(name="night", start="19:00", end="07:00", mode="whole")
    node = SimpleNamespace(name="gpu01", gpus=[
        _gpu(0, "whole", "a"), _gpu(1, "mig", "b", mig_layout={"3g.71gb": 2}), _gpu(2, "auto"), _gpu(3, "auto"),
        _gpu(4, "auto"), _gpu(5, "timeslice", "e", replicas=2, windows=(night,)), _gpu(6, "auto"), _gpu(7, "whole")])
    assigned = {("gpu01", 2): {"mode": "timeslice", "team": "c", "replicas": 3},
                ("gpu01", 3): {"mode": "timeslice", "team": "d", "replicas": 4},
                ("gpu01", 6): {"mode": "whole", "team": "a", "mig_layout": {"7g.141gb": 1}}}
    ctx = SimpleNamespace(inventory=SimpleNamespace(nodes=[node]),
                          raw_nodes={"gpu01": ("host-1", {"gpu_model": "h200", "gpu_count": 8, "gpus": []})})
    # The time-sliced GPUs of a node share one replica count, the largest: 4. GPU 4 (auto, no team) is not
    # written; GPU 7 (whole, no team: the cohort's) is.
    assert proposal._node_vars(ctx, assigned) == {"host-1": {"gpu_model": "h200", "gpu_count": 8, "gpus": [
        {"index": 0, "mode": "whole", "team": "a"},
        {"index": 1, "mode": "mig", "team": "b", "mig_layout": {"3g.71gb": 2}},
        {"index": 2, "mode": "timeslice", "team": "c", "replicas": 4},
        {"index": 3, "mode": "timeslice", "team": "d", "replicas": 4},
        {"index": 5, "mode": "timeslice", "team": "e", "replicas": 4,
         "schedule": [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole"}]},
        {"index": 6, "mode": "whole", "team": "a"}, {"index": 7, "mode": "whole"}]}}
