# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proposal's pieces worked out by hand: cards of one model for an advised demand and the
buying options, the lending window of idle pools, team quotas, entries as they would be
written, and whole serving GPUs placed; figures from the H200's 143771 MiB (nvidia-smi) and
the MIG User Guide's H200 placements (8 memory slices: 3g.71gb at 0 or 4, size 4; 1g.18gb at
0-6, size 1; 7g.141gb the whole card). Kills proposal.py mutants that survived `make
mutation` (docs/testing.md, "Mutation testing")."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog

H200 = gpu_catalog.CATALOG["h200-141gb"]


def _ctx(buy_max_cards=8):
    return SimpleNamespace(settings=SimpleNamespace(buy_max_cards=buy_max_cards))


def _service(sharing, replicas, memory_mib, compute, kind="serving"):
    return {"sharing": sharing, "kind": kind, "replicas": replicas, "memory_need_mib": memory_mib,
            "compute_need": compute}


def test_serving_mig_and_time_sliced_demand_add_up_in_cards():
    advised = [
        _service("whole", 2, 200000, 0.5),        # ceil(200000 / 143771) = 2 cards a replica: 4
        _service("mig", 1, 130000, 0.5),          # only 7g.141gb holds 130000 MiB: the whole card, 1
        _service("mig", 3, 150000, 0.5),          # no profile holds it: ceil(150000 / 143771) = 2 a replica: 6
        _service("mig", 2, 60000, 0.3),           # 3g.71gb (71168 MiB, 3 of 7 slices) twice: 0 and 4 fill a card
        _service("mig", 1, 10000, 0.1),           # 1g.18gb: no memory slice left beside two 3g.71gb: a second card
        _service("timeslice", 5, 40000, 0.2),     # 5 x 40000 = 200000 MiB in a pool: ceil(/ 143771) = 2
    ]
    # 4 + 1 + 6 + 2 + 2 = 15, and no training or batch run to add.
    assert proposal._cards_for(_ctx(), H200, advised, 0) == 15


def test_the_largest_training_or_batch_run_less_the_lent_gpus_is_added():
    training = _service("whole", 2, 300000, 2.0, kind="training")
    # A replica: ceil(300000 / 143771) = 3 cards (its compute 2.0 needs 2); two replicas: 6, less 1 lent.
    assert proposal._cards_for(_ctx(), H200, [training], 1) == 5
    # A batch run of one card, nothing lent: 1. More lent than the run needs adds nothing.
    batch = _service("whole", 1, 100000, 0.5, kind="batch")
    assert proposal._cards_for(_ctx(), H200, [batch], 0) == 1
    assert proposal._cards_for(_ctx(), H200, [batch], 2) == 0


def test_a_run_wider_than_the_cards_one_may_buy_makes_the_model_unfit():
    training = _service("whole", 1, 300000, 2.0, kind="training")     # 3 cards a replica
    assert proposal._cards_for(_ctx(buy_max_cards=3), H200, [training], 0) == 3
    assert proposal._cards_for(_ctx(buy_max_cards=2), H200, [training], 0) is None


def _buy(advised, prices=(), nodes=(), buy_max_cards=8):
    inventory = SimpleNamespace(policy=SimpleNamespace(gpu_prices=prices),
                                nodes=[SimpleNamespace(model=m, gpus=[None] * n) for m, n in nodes])
    ctx = SimpleNamespace(settings=SimpleNamespace(buy_max_cards=buy_max_cards), inventory=inventory)
    return proposal._buy(ctx, advised, [], ["short-one"])


def test_priced_models_come_first_by_cost_with_what_is_owned_and_to_buy():
    advised = [_service("whole", 1, 100000, 0.5)]
    bought = _buy(advised, prices=(("h200-141gb", 30000.123), ("l40s", 8000)),
                  nodes=(("h200-141gb", 4), ("h200-141gb", 8)))
    # L40S: ceil(100000 / 46068) = 3 cards at 8000 = 24000; H200: 1 card at 30000.123, cost rounded to cents.
    assert bought["options"][:2] == [
        {"model": "l40s", "cards": 3, "price": 8000, "cost": 24000, "owned": 0, "to_buy": 3},
        {"model": "h200-141gb", "cards": 1, "price": 30000.123, "cost": 30000.12, "owned": 12, "to_buy": 0}]
    assert bought["priced"] is True and bought["short"] == ["short-one"]
    assert all("price" not in row for row in bought["options"][2:])


def test_a_model_too_small_for_a_run_is_left_out_and_the_others_still_listed():
    training = _service("whole", 1, 300000, 2.0, kind="training")
    # At most 4 cards a replica: a card needs at least 300000 / 4 = 75000 MiB (the 40 GB A100 needs 8, first in
    # the catalogue; the 80 GB A100 ceil(300000 / 81920) = 4).
    models = {row["model"] for row in _buy([training], buy_max_cards=4)["options"]}
    assert "a100-40gb" not in models and "l40s" not in models
    assert {"a100-80gb", "h100-80gb", "h200-141gb", "b200"} <= models


# --------------------------------------------------------------------------- windows in which idle pools lend

def _window_ctx(min_window_hours=4):
    teams = [SimpleNamespace(name=n, lend=lend, borrow=borrow) for n, lend, borrow in (
        ("prod", False, False), ("ds", True, False), ("research", True, True), ("tr", True, True),
        ("bt", True, True), ("srv", True, True))]
    return SimpleNamespace(
        settings=SimpleNamespace(min_window_hours=min_window_hours, idle_hour_percentile=90, idle_activity=0.7),
        inventory=SimpleNamespace(teams=teams, policy=SimpleNamespace(timezone="UTC")))


def _pool(team, name, hours, gpus):
    return {"team": team, "name": name, "idle_hours": list(hours)}, gpus


ADVISED = [{"team": "tr", "kind": "training"}, {"team": "bt", "kind": "batch"}, {"team": "srv", "kind": "serving"}]


def test_a_window_covers_the_hours_every_lending_pool_is_idle():
    pools = [
        _pool("prod", "prod-pool", range(24), [("gpu03", 0)]),                # does not lend: never in a window
        _pool("ds", "notebooks", [*range(18, 24), *range(0, 6)], [("gpu01", 2)]),
        _pool("ds", "empty", [], []),                                          # no GPU: left out
        _pool("research", "labs", [*range(20, 24), *range(0, 7)], [("gpu02", 0), ("gpu01", 2)]),
    ]
    # Both lending pools idle together 20:00-06:00 (10 hours, over 03:00: "night"); training (tr) and batch (bt)
    # of borrowing teams may use it, serving (srv) does not; each GPU once, in the pools' order.
    assert proposal._windows(_window_ctx(), pools, ADVISED) == [{
        "name": "night", "from": "20:00", "until": "06:00", "mode": "whole",
        "gpus": [["gpu01", 2], ["gpu02", 0]], "teams": ["ds", "research"], "for": ["bt", "tr"],
        "why": "labs, notebooks idle from 20:00 to 06:00 UTC (90th percentile of activity below 70 %) on every day "
               "of the window; whole then, so bt and tr can borrow it through Kueue"}]


def test_a_window_is_at_least_min_window_hours_and_never_the_whole_day():
    four = [_pool("ds", "notebooks", range(9, 13), [("gpu01", 2)])]
    window = proposal._windows(_window_ctx(min_window_hours=4), four, ADVISED)
    assert [(w["name"], w["from"], w["until"]) for w in window] == [("idle", "09:00", "13:00")]   # 03:00 not in it
    assert proposal._windows(_window_ctx(min_window_hours=5), four, ADVISED) == []
    always = [_pool("ds", "notebooks", range(24), [("gpu01", 2)])]
    assert proposal._windows(_window_ctx(), always, ADVISED) == []


# --------------------------------------------------------------------------- small pieces

def test_a_replica_needs_at_least_one_card_and_exactly_its_memory_fits_one():
    h200 = H200
    assert proposal._cards_per_replica({"memory_need_mib": 0, "compute_need": 0.0}, h200) == 1
    assert proposal._cards_per_replica({"memory_need_mib": 143771, "compute_need": 0.5}, h200) == 1


def test_runs_of_a_circular_day_longest_first_then_by_start():
    assert proposal._circular_runs([True, True, True]) == [(0, 3)]
    assert proposal._circular_runs([False, True, False]) == [(1, 1)]
    assert proposal._circular_runs([False, False, True]) == [(2, 1)]
    assert proposal._circular_runs([True, False, True, True]) == [(2, 3)]           # 2, 3 and round to 0
    assert proposal._circular_runs([True, False, True, False]) == [(0, 1), (2, 1)]
    assert proposal._circular_runs([False, True, True, False, True]) == [(1, 2), (4, 1)]


def test_first_fit_packs_mig_profiles_by_the_placement_rules():
    p3g, p1g = H200.profile("3g.71gb"), H200.profile("1g.18gb")
    # Two 3g.71gb (memory slices 0-3 and 4-7) fill a card; a 1g.18gb then needs the next.
    assert proposal._first_fit(H200, [p3g, p3g, p1g]) == ([0, 0, 1], 2)
    # Seven 1g.18gb fit one H200 (placements 0-6); the eighth starts a second card.
    assert proposal._first_fit(H200, [p1g] * 8) == ([0] * 7 + [1], 2)


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


def test_idle_hours_are_below_the_threshold_absent_or_unsampled():
    import numpy as np
    hours = np.arange(23)                                   # one sample for each hour 0-22; 23 has none
    act = np.full(23, 0.5)
    act[0], act[1], act[2] = 0.05, 0.01, 0.9                # 0: at the threshold, not below; 1: below
    present = np.ones(23, dtype=bool)
    present[2] = False                                      # 2: the service was not there
    ctx = SimpleNamespace(hours=hours, settings=SimpleNamespace(idle_hour_percentile=90, idle_activity=0.05))
    assert proposal.idle_hours(ctx, {"present": present, "act_rel": act}, slice(None)) == [1, 2, 23]


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


# --------------------------------------------------------------------------- team quotas

def test_team_quotas_from_gpus_in_use_at_once():
    import numpy as np
    nan = float("nan")

    def device(mem, fraction):
        return SimpleNamespace(mem=np.array(mem), act=np.full(len(mem), nan), unit_fraction=fraction)
    # Team a: a 3g slice (3/7 of the card) in use at steps 0-2, a whole GPU at step 1: 3/7, 10/7, 3/7, 0.
    services = {("ns-a", "svc"): SimpleNamespace(devices={("n", 0, "3g"): device([1.0, 1.0, 1.0, nan], 3 / 7),
                                                          ("n", 1): device([nan, 1.0, nan, nan], 1.0)})}
    ctx = SimpleNamespace(
        settings=SimpleNamespace(quota_percentile=50, idle_hour_percentile=90),
        inventory=SimpleNamespace(teams=[SimpleNamespace(name="a"), SimpleNamespace(name="b")],
                                  nodes=[SimpleNamespace(gpus=[SimpleNamespace(team="a"), SimpleNamespace(team="a"),
                                                               SimpleNamespace(team=None)])]),
        team_of_ns={"ns-a": "a"}, usage=SimpleNamespace(steps=4), hours=np.array([0, 0, 1, 2]))
    # Median of 0, 3/7, 3/7, 10/7: 3/7 = 0.43, a quota of 1; peak 10/7 = 1.43; mean (9/7 + 1) / 4 = 0.57.
    # Idle hours (90th percentile 0): a only at 02:00; b, with nothing, at every hour with a sample.
    assert proposal.team_quotas(ctx, services, slice(0, 4)) == [
        {"team": "a", "gpus_in_use_p": 0.43, "percentile": 50, "gpus_in_use_max": 1.43, "gpus_in_use_mean": 0.57,
         "quota_proposed": 1, "gpus_owned_now": 2, "idle_hours": [2]},
        {"team": "b", "gpus_in_use_p": 0.0, "percentile": 50, "gpus_in_use_max": 0.0, "gpus_in_use_mean": 0.0,
         "quota_proposed": 0, "gpus_owned_now": 0, "idle_hours": [0, 1, 2]}]
    # An empty window: nothing in use, no idle hour.
    assert [(q["gpus_in_use_p"], q["gpus_in_use_max"], q["gpus_in_use_mean"], q["idle_hours"])
            for q in proposal.team_quotas(ctx, services, slice(0, 0))] == [(0.0, 0.0, 0.0, [])] * 2


# --------------------------------------------------------------------------- placing advised services

def _placement():
    def node(name, model, teams, dra=False):
        return SimpleNamespace(name=name, model=model, dra=dra,
                               gpus=[SimpleNamespace(index=i, team=t) for i, t in enumerate(teams)])
    nodes = [node("n1", "h200-141gb", ["a", "b"]), node("n2", "l40s", ["a", "b"]), node("n3", "h200-141gb", ["a"], True)]
    ctx = SimpleNamespace(inventory=SimpleNamespace(nodes=nodes), node_models={n.name: n.model for n in nodes})
    # chat ran on n1's GPU 1 (team b's) before.
    services = {("ns", "chat"): SimpleNamespace(devices={"d": SimpleNamespace(key=("n1", 1, "uuid"))})}
    return proposal._Placement(ctx, services)


def test_whole_serving_takes_its_own_gpus_first_then_its_teams_and_never_a_dra_servers():
    place = _placement()
    serving = {"sharing": "whole", "kind": "serving", "gpus": 1}
    place.whole_serving([{**serving, "name": "chat", "team": "a", "replicas": 1, "model": "h200-141gb"},
                         {**serving, "name": "emb", "team": "b", "replicas": 2, "model": "h200-141gb"},
                         {**serving, "name": "tune", "team": "b", "replicas": 1, "model": "l40s", "kind": "training"}])
    # chat: the GPU it used (n1/1) before its team's (n1/0); emb: the one H200 left (n3 is a DRA server), one short.
    assert place.assigned == {("n1", 1): {"mode": "whole", "team": "a"}, ("n1", 0): {"mode": "whole", "team": "b"}}
    assert place.unplaced == ["emb: 1 whole h200-141gb GPUs short"]
    # Any model: the team's own GPU first, then by name.
    assert place.take(None, 1, {"other"}, "b") == [("n2", 1)]
    assert place.take(None, 2, {"other"}, "b") == [("n2", 0)] and not place.free
    # A service new to the fleet takes its team's GPU (n1/1 is b's), not the first by name.
    place = _placement()
    place.whole_serving([{**serving, "name": "new", "team": "b", "replicas": 1, "model": "h200-141gb"}])
    assert place.assigned == {("n1", 1): {"mode": "whole", "team": "b"}}
