# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Placing the advised services on the current GPUs (proposal._Placement), every step worked
out by hand on small fleets: MIG cards packed by the MIG User Guide's H200 placements (8
memory slices; 3g.71gb at 0 or 4, size 4; 1g.18gb at 0-6, size 1) and given to the team holding
most of each; MPS on whole nodes; time-sliced pools joining the GPUs of the pools they shared
with while the H200's 143771 MiB holds both; kept services; whole serving GPUs; training and
batch; spare GPUs.
"""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog


H200 = "h200-141gb"


def _gpu(index, team, mode="whole", replicas=0, mig_layout=None, windows=()):
    return SimpleNamespace(index=index, team=team, mode=mode, replicas=replicas, mig_layout=mig_layout, windows=windows)


def _placement(nodes, used=()):
    """nodes: (name, model, [gpu, ...], dra); used: (service, node, gpu) seen in the history."""
    nodes = [SimpleNamespace(name=name, model=model, gpus=gpus, dra=dra) for name, model, gpus, dra in nodes]
    ctx = SimpleNamespace(inventory=SimpleNamespace(nodes=nodes), node_models={n.name: n.model for n in nodes})
    services = {}
    for i, (name, node, gpu) in enumerate(used):
        svc = services.setdefault(("ns", name), SimpleNamespace(devices={}))
        svc.devices["d%d" % i] = SimpleNamespace(key=(node, gpu, "GPU-%d" % i))
    return proposal._Placement(ctx, services)


def _h200s():
    # n1: GPUs of teams a and b; n2: both b's; n3: an L40S of a; n4: a DRA server (never placed on).
    return [("n1", H200, [_gpu(0, "a"), _gpu(1, "b")], False), ("n2", H200, [_gpu(0, "b"), _gpu(1, "b")], False),
            ("n3", "l40s", [_gpu(0, "a")], False), ("n4", H200, [_gpu(0, "a")], True)]


def _mig(name, team, profile, replicas, model=H200):
    return {"name": name, "team": team, "sharing": "mig", "kind": "serving", "mig_profile": profile,
            "replicas": replicas, "model": model}


def test_mig_slices_pack_onto_cards_each_to_the_team_holding_most_of_it():
    # big (team a): two 3g.71gb fill card 1 (at 0 and 4); small (team b): three 1g.18gb on card 2.
    # small ran on n2/1: card 1 (team a's) takes it first (a GPU its group used), card 2 (team
    # b's) then b's first GPU by name, n1/1. A100 MIG services: no A100 in the fleet.
    place = _placement(_h200s(), used=[("small", "n2", 1)])
    place.mig([_mig("small", "b", "1g.18gb", 3), _mig("big", "a", "3g.71gb", 2),
               {"name": "chat", "team": "a", "sharing": "whole", "kind": "serving", "replicas": 1, "model": H200},
               _mig("a100-x", "b", "1g.10gb", 1, "a100-80gb"), _mig("a100-y", "a", "3g.40gb", 1, "a100-80gb")])
    assert place.assigned == {("n2", 1): {"mode": "mig", "team": "a"}, ("n1", 1): {"mode": "mig", "team": "b"}}
    # one A100 card holds 3g.40gb at 0 and 1g.10gb at 4.
    assert place.unplaced == ["MIG services a100-x, a100-y: one a100-80gb GPU short"]
    assert sorted(place.free) == [("n1", 0), ("n2", 0), ("n3", 0)]


def test_mig_cards_of_one_team_prefer_its_gpus():
    # Three 1g.18gb of team a on one card, no history: team a's GPU n1/0, not n1/1 (b's).
    place = _placement(_h200s())
    place.mig([_mig("emb", "a", "1g.18gb", 3)])
    assert place.assigned == {("n1", 0): {"mode": "mig", "team": "a"}}
    assert place.unplaced == []


def test_a_mig_card_goes_to_the_team_with_most_slices_on_it_summed():
    # 2g.35gb (size 2) of team b at 0; five 1g.18gb of team a at 2-6: a holds 5 of the card's
    # 8 slices, b 2.
    place = _placement([("n1", H200, [_gpu(0, "b")], False)])
    place.mig([_mig("wide", "b", "2g.35gb", 1), _mig("small", "a", "1g.18gb", 5)])
    assert place.assigned == {("n1", 0): {"mode": "mig", "team": "a"}}


def _mps(name, team, replicas, gpu_replicas, model=H200):
    return {"name": name, "team": team, "sharing": "mps", "kind": "serving", "replicas": replicas,
            "gpu_replicas": gpu_replicas, "model": model}


def test_mps_takes_whole_nodes_with_cards_per_team_at_the_fewest_clients():
    # Clients per card: the fewest any allows, 3. Team b's 5 replicas need ceil(5/3) = 2 cards,
    # a's 2 need 1: [b, b, a]. ocr (a) ran on n1/0: n1 first, then n2 (all free); n2's second
    # GPU is beyond the three cards and goes to b, the team with most clients.
    place = _placement(_h200s(), used=[("ocr", "n1", 0)])
    place.mps([_mps("asr", "b", 5, 4), _mps("ocr", "a", 2, 3)])
    mps = {"mode": "mps", "replicas": 3}
    assert place.assigned == {("n1", 0): dict(mps, team="b"), ("n1", 1): dict(mps, team="b"),
                              ("n2", 0): dict(mps, team="a"), ("n2", 1): dict(mps, team="b")}
    assert place.unplaced == [] and sorted(place.free) == [("n3", 0)]


def test_mps_skips_nodes_with_a_gpu_taken_and_prefers_the_first_teams_nodes():
    # n1/1 is taken already: only n2 is whole and free. Two cards needed (4 replicas, 2
    # clients each), n2 has two; nobody ran there before: b's node n2.
    place = _placement(_h200s())
    place.free.pop(("n1", 1))
    place.mps([_mps("asr", "b", 4, 2)])
    assert place.assigned == {("n2", 0): {"mode": "mps", "team": "b", "replicas": 2},
                              ("n2", 1): {"mode": "mps", "team": "b", "replicas": 2}}
    assert place.unplaced == []


def test_mps_cards_of_teams_with_as_many_replicas_go_by_team_name():
    # b and a with 2 replicas each at 2 clients: one card each, a's first (by name).
    place = _placement([("n1", H200, [_gpu(0, "b"), _gpu(1, "b")], False)])
    place.mps([_mps("asr", "b", 2, 2), _mps("ocr", "a", 2, 2)])
    assert place.assigned == {("n1", 0): {"mode": "mps", "team": "a", "replicas": 2},
                              ("n1", 1): {"mode": "mps", "team": "b", "replicas": 2}}


def test_mps_takes_the_first_teams_own_node_and_no_more_nodes_than_it_needs():
    # Two cards for b; nobody ran anywhere: n2 (b's only) before n1 (a GPU of a), and n2's two
    # GPUs are exactly enough, so n1 stays free.
    place = _placement(_h200s())
    place.mps([_mps("asr", "b", 4, 2)])
    assert place.assigned == {("n2", 0): {"mode": "mps", "team": "b", "replicas": 2},
                              ("n2", 1): {"mode": "mps", "team": "b", "replicas": 2}}
    assert sorted(place.free) == [("n1", 0), ("n1", 1), ("n3", 0)]


def test_mps_short_of_whole_nodes_says_how_many_gpus():
    # 7 replicas at 2 clients a card: 4 cards; the one free L40S node has one GPU: 3 short.
    place = _placement(_h200s())
    place.mps([_mps("asr", "a", 7, 2, "l40s"), _mps("tts", "a", 1, 2, "l40s")])
    assert place.assigned == {("n3", 0): {"mode": "mps", "team": "a", "replicas": 2}}
    # 8 replicas in all: 4 cards, one got.
    assert place.unplaced == ["asr, tts: 3 MPS l40s GPUs short (MPS takes every GPU of a node)"]


def test_mps_nodes_that_ran_the_services_come_before_the_first_teams_own():
    # Team a's cards first (it has most replicas); n2 (all b's) ran asr before: n2 before n1.
    place = _placement(_h200s(), used=[("asr", "n2", 0)])
    place.mps([_mps("asr", "a", 2, 2)])
    assert place.assigned == {("n2", 0): {"mode": "mps", "team": "a", "replicas": 2},
                              ("n2", 1): {"mode": "mps", "team": "a", "replicas": 2}}


def _pool(name, team, replicas, memory_mib, pool_gpus, gpu_replicas, shared_with=(), model=H200):
    return {"name": name, "team": team, "sharing": "timeslice", "kind": "notebook", "replicas": replicas,
            "memory_need_mib": memory_mib, "pool_gpus": pool_gpus, "gpu_replicas": gpu_replicas,
            "shared_with": list(shared_with), "model": model}


def test_time_sliced_pools_join_the_gpus_of_pools_they_shared_with_while_memory_holds():
    place = _placement([("n1", H200, [_gpu(0, "b"), _gpu(1, "b")], False), ("n2", H200, [_gpu(0, "a")], False)])
    nb = _pool("nb", "b", 4, 10000, 2, 2)                              # 40000 MiB over 2 GPUs: 20000 each
    lab = _pool("lab", "b", 3, 30000, 1, 3, shared_with=["nb"])       # 20000 + 90000 <= 143771: joins n1/0
    viz = _pool("viz", "b", 1, 40000, 1, 1, shared_with=["nb"])       # n1/0 holds 110000 + 40000 > 143771: n1/1
    big = _pool("big", "a", 1, 200000, 2, 2, shared_with=["nb"])       # 220000 fits nowhere: its own GPUs
    pools = place.pools([_mig("m", "a", "1g.18gb", 1), nb, lab, viz, big])
    assert [(r["name"], gpus) for r, gpus in pools] == [
        ("nb", [("n1", 0), ("n1", 1)]), ("lab", [("n1", 0)]), ("viz", [("n1", 1)]), ("big", [("n2", 0)])]
    # the joined GPUs' replicas: the sharers on each (2 + 3 on n1/0, 2 + 1 on n1/1).
    assert place.assigned == {("n1", 0): {"mode": "timeslice", "team": "b", "replicas": 5},
                              ("n1", 1): {"mode": "timeslice", "team": "b", "replicas": 3},
                              ("n2", 0): {"mode": "timeslice", "team": "a", "replicas": 2}}
    assert place.unplaced == ["big: 1 time-sliced h200-141gb GPUs short"]


def test_a_pool_joins_only_while_the_sharers_stay_within_64_replicas():
    place = _placement([("n1", H200, [_gpu(0, "b"), _gpu(1, "b")], False)])
    many = _pool("many", "b", 60, 100, 1, 60)
    four = _pool("four", "b", 4, 100, 1, 4, shared_with=["many"])       # 60 + 4 = 64: joins
    one = _pool("one", "b", 1, 100, 1, 1, shared_with=["many"])         # 65: its own GPU
    pools = place.pools([many, four, one])
    assert [(r["name"], gpus) for r, gpus in pools] == [("many", [("n1", 0)]), ("four", [("n1", 0)]),
                                                        ("one", [("n1", 1)])]
    assert place.assigned[("n1", 0)]["replicas"] == 64


def test_a_pool_joins_when_memory_is_exactly_full_and_chains_through_a_joined_pool():
    # first: 4 x 10000 MiB on one GPU; second: 4 x 25942.75 = 103771 MiB, 40000 + 103771 =
    # 143771 MiB, the H200's memory exactly: joins. third shares with second (on first's GPU)
    # and with chat, a service that is no pool: 1 x 1 MiB more is too much, its own GPU.
    place = _placement([("n1", H200, [_gpu(0, "b"), _gpu(1, "b")], False)])
    first = _pool("first", "b", 4, 10000, 1, 4)
    second = _pool("second", "b", 4, 25942.75, 1, 4, shared_with=["first"])
    third = _pool("third", "b", 1, 1, 1, 1, shared_with=["chat", "second"])
    assert [gpus for _r, gpus in place.pools([first, second, third])] == [[("n1", 0)], [("n1", 0)], [("n1", 1)]]
    assert place.assigned[("n1", 0)]["replicas"] == 8


def test_a_pool_on_one_gpu_holds_all_its_memory_there():
    # 100000 MiB on its one GPU: 50000 MiB more (150000 > 143771) does not join.
    place = _placement([("n1", H200, [_gpu(0, "b"), _gpu(1, "b")], False)])
    one = _pool("one", "b", 2, 50000, 1, 2)
    other = _pool("other", "b", 1, 50000, 1, 1, shared_with=["one"])
    assert [gpus for _r, gpus in place.pools([one, other])] == [[("n1", 0)], [("n1", 1)]]


def test_a_pool_takes_gpus_of_its_model_and_its_team_first():
    # m0's L40S sorts first and is b's; n1/0 is a's: b's H200 pool takes n1/1.
    place = _placement([("m0", "l40s", [_gpu(0, "b")], False), ("n1", H200, [_gpu(0, "a"), _gpu(1, "b")], False)])
    assert [gpus for _r, gpus in place.pools([_pool("nb", "b", 2, 100, 1, 2)])] == [[("n1", 1)]]


def test_a_pool_of_an_unknown_card_never_joins():
    place = _placement([("n1", None, [_gpu(0, "b"), _gpu(1, "b")], False)])
    first = _pool("first", "b", 2, 100, 1, 2, model=None)
    second = _pool("second", "b", 2, 100, 1, 2, shared_with=["first"], model=None)
    assert [gpus for _r, gpus in place.pools([first, second])] == [[("n1", 0)], [("n1", 1)]]


def test_services_kept_as_they_are_keep_their_gpus_and_a_kept_workload_its_teams():
    nodes = [("m0", H200, [_gpu(0, "b", "whole")], False),
             ("n1", H200, [_gpu(0, "b", "timeslice", 4), _gpu(1, "a", "mig", mig_layout={"1g.18gb": 7})], False),
             ("n2", H200, [_gpu(0, "b", "timeslice", 4), _gpu(1, "b", "timeslice", 2)], False),
             ("n3", H200, [_gpu(0, "a", "whole", windows=(SimpleNamespace(name="night", start="19:00", end="07:00",
                                                                          mode="whole"),))], False),
             ("n5", H200, [_gpu(0, "a", "mig", mig_layout={"3g.71gb": 2})], False)]
    place = _placement(nodes, used=[("old", "n3", 0), ("fresh", "n5", 0)])
    current = {"nb": SimpleNamespace(sharing="timeslice", team="b", replicas=8),
               "emb": SimpleNamespace(sharing="mig", team="a", replicas=2),
               "tune": SimpleNamespace(sharing="whole", team="a", replicas=1),
               "old": SimpleNamespace(sharing="timeslice", team="a", replicas=1),
               "fresh": SimpleNamespace(sharing="mig", team="a", replicas=1)}
    place.kept([{"name": "fresh", "status": "ok"},            # placed by the other steps: its n5/0 stays free
                {"name": "old", "status": "unstable"},        # its GPU n3/0, as it is
                {"name": "nb", "status": "no_data"},          # b's time-sliced GPUs, 4 + 4 replicas: 8, enough
                {"name": "emb", "status": "no_data"},         # one of a's MIG GPUs, the first by name
                {"name": "tune", "status": "no_data"}],       # whole: nothing kept
               current)
    assert place.assigned == {
        ("n3", 0): {"mode": "whole", "team": "a", "schedule": [{"name": "night", "from": "19:00", "until": "07:00",
                                                                "mode": "whole"}]},
        ("n1", 0): {"mode": "timeslice", "team": "b", "replicas": 4},
        ("n2", 0): {"mode": "timeslice", "team": "b", "replicas": 4},
        ("n1", 1): {"mode": "mig", "team": "a", "mig_layout": {"1g.18gb": 7}}}
    # m0/0 is b's but whole; n2/1 would be a third time-sliced GPU for nb.
    assert sorted(place.free) == [("m0", 0), ("n2", 1), ("n5", 0)]


def test_a_kept_mig_workload_whose_team_has_a_mig_gpu_already_takes_none():
    place = _placement([("n1", H200, [_gpu(0, "a", "mig", mig_layout={"1g.18gb": 7})], False)])
    place.assigned[("n9", 0)] = {"mode": "mig", "team": "a"}
    place.kept([{"name": "emb", "status": "no_data"}], {"emb": SimpleNamespace(sharing="mig", team="a", replicas=3)})
    assert sorted(place.assigned) == [("n9", 0)]


def test_a_kept_workload_counts_the_gpus_already_given_to_its_team_in_its_mode():
    nodes = [("n1", H200, [_gpu(0, "b", "timeslice", 4), _gpu(1, "b", "timeslice", 4)], False)]
    place = _placement(nodes)
    place.assigned[("n9", 0)] = {"mode": "timeslice", "team": "b", "replicas": 3}
    place.kept([{"name": "nb", "status": "no_data"}], {"nb": SimpleNamespace(sharing="timeslice", team="b", replicas=6)})
    # 3 already, + 4 of n1/0 = 7 >= 6: n1/1 stays free.
    assert sorted(place.assigned) == [("n1", 0), ("n9", 0)]


def test_a_kept_workload_that_ran_somewhere_keeps_only_those_gpus():
    nodes = [("n1", H200, [_gpu(0, "b", "timeslice", 4), _gpu(1, "b", "timeslice", 4)], False)]
    place = _placement(nodes, used=[("nb", "n1", 1)])
    place.kept([{"name": "nb", "status": "unstable"}], {"nb": SimpleNamespace(sharing="timeslice", team="b", replicas=8)})
    assert sorted(place.assigned) == [("n1", 1)]


def test_training_and_batch_take_the_rest_by_quota_largest_first():
    place = _placement(_h200s(), used=[("etl", "n1", 0)])
    advised = [{"name": "tune", "team": "a", "kind": "training", "sharing": "whole", "gpus": 2},
               {"name": "etl", "team": "b", "kind": "batch", "sharing": "whole", "gpus": 1},
               {"name": "mig-train", "team": "b", "kind": "training", "sharing": "mig", "gpus": 1},
               {"name": "chat", "team": "b", "kind": "serving", "sharing": "whole", "gpus": 4}]
    teams = [{"team": "a", "quota_proposed": 1}, {"team": "b", "quota_proposed": 3}]
    place.batch(advised, teams)
    # b wants max(quota 3, etl's 1 GPU) = 3 and goes first: n1/0 (etl ran there), then its own
    # n1/1 and n2/0 (by name). a wants max(quota 1, tune's 2 GPUs) = 2: its own n3/0, then n2/1.
    whole_a, whole_b = {"mode": "whole", "team": "a"}, {"mode": "whole", "team": "b"}
    assert place.assigned == {("n1", 0): whole_b, ("n1", 1): whole_b, ("n2", 0): whole_b,
                              ("n3", 0): whole_a, ("n2", 1): whole_a}
    assert place.free == {}


def test_a_teams_training_takes_only_its_quota_or_its_widest_run():
    place = _placement(_h200s())
    place.batch([{"name": "tune", "team": "a", "kind": "training", "sharing": "whole", "gpus": 1}],
                [{"team": "a", "quota_proposed": 2}])
    assert sorted(place.assigned) == [("n1", 0), ("n3", 0)]
    # Two runs of a: 3 GPUs and then 1; quota 1: the wider run's 3.
    place = _placement(_h200s())
    place.batch([{"name": "tune", "team": "a", "kind": "training", "sharing": "whole", "gpus": 3},
                 {"name": "etl", "team": "a", "kind": "batch", "sharing": "whole", "gpus": 1}],
                [{"team": "a", "quota_proposed": 1}])
    assert sorted(place.assigned) == [("n1", 0), ("n1", 1), ("n3", 0)]


def test_spare_gpus_stay_with_their_owner_whole_or_auto():
    place = _placement([("n1", H200, [_gpu(0, "a", "auto"), _gpu(1, "b", "timeslice", 4)], False)])
    place.spare()
    assert place.assigned == {("n1", 0): {"mode": "auto", "team": "a"}, ("n1", 1): {"mode": "whole", "team": "b"}}
    assert place.free == {}


def test_mig_demand_is_packed_largest_first():
    # Two 4g.71gb (60 GiB at half a card: more than 3g.71gb's 3 of 7 compute slices) and two
    # 2g.35gb (20 GiB at 0.2: more than 1g.35gb's one slice). 4g.71gb starts only at 0 and 2g.35gb
    # at 0, 2 or 4: largest first, each card holds a 4g.71gb at 0 and a 2g.35gb at 4: 2 cards.
    # (Smallest first would put both 2g.35gb on one card, where no 4g.71gb fits: 3 cards.)
    ctx = SimpleNamespace(settings=SimpleNamespace(buy_max_cards=8))
    mig = {"sharing": "mig", "kind": "serving", "replicas": 2}
    advised = [dict(mig, memory_need_mib=20 * 1024, compute_need=0.2),
               dict(mig, memory_need_mib=60 * 1024, compute_need=0.5)]
    assert proposal._cards_for(ctx, gpu_catalog.CATALOG[H200], advised, 0) == 2


# --------------------------------------------------------------------------- placing advised services

def _serving_placement():
    def node(name, model, teams, dra=False):
        return SimpleNamespace(name=name, model=model, dra=dra,
                               gpus=[SimpleNamespace(index=i, team=t) for i, t in enumerate(teams)])
    nodes = [node("n1", "h200-141gb", ["a", "b"]), node("n2", "l40s", ["a", "b"]), node("n3", "h200-141gb", ["a"], True)]
    ctx = SimpleNamespace(inventory=SimpleNamespace(nodes=nodes), node_models={n.name: n.model for n in nodes})
    # chat ran on n1's GPU 1 (team b's) before.
    services = {("ns", "chat"): SimpleNamespace(devices={"d": SimpleNamespace(key=("n1", 1, "uuid"))})}
    return proposal._Placement(ctx, services)


def test_whole_serving_takes_its_own_gpus_first_then_its_teams_and_never_a_dra_servers():
    place = _serving_placement()
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
    place = _serving_placement()
    place.whole_serving([{**serving, "name": "new", "team": "b", "replicas": 1, "model": "h200-141gb"}])
    assert place.assigned == {("n1", 1): {"mode": "whole", "team": "b"}}
