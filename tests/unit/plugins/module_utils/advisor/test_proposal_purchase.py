# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cards of one model for an advised demand and the buying options, worked out by hand;
figures from the H200's 143771 MiB (nvidia-smi) and the MIG User Guide's H200 placements (8
memory slices: 3g.71gb at 0 or 4, size 4; 1g.18gb at 0-6, size 1; 7g.141gb the whole card).
"""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog


def test_a_replica_needs_the_cards_of_its_memory_and_of_its_compute():
    h200 = gpu_catalog.CATALOG["h200-141gb"]
    # A whole GPU's compute exactly (1.0) is one card, not two; 200000 MiB needs ceil(200000 / 143771) = 2.
    assert proposal._cards_per_replica({"memory_need_mib": 1000, "compute_need": 1.0}, h200) == 1
    assert proposal._cards_per_replica({"memory_need_mib": 200000, "compute_need": 0.5}, h200) == 2
    assert proposal._cards_per_replica({"memory_need_mib": 1000, "compute_need": 2.0}, h200) == 2


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


# --------------------------------------------------------------------------- small pieces

def test_a_replica_needs_at_least_one_card_and_exactly_its_memory_fits_one():
    h200 = H200
    assert proposal._cards_per_replica({"memory_need_mib": 0, "compute_need": 0.0}, h200) == 1
    assert proposal._cards_per_replica({"memory_need_mib": 143771, "compute_need": 0.5}, h200) == 1


def test_first_fit_packs_mig_profiles_by_the_placement_rules():
    p3g, p1g = H200.profile("3g.71gb"), H200.profile("1g.18gb")
    # Two 3g.71gb (memory slices 0-3 and 4-7) fill a card; a 1g.18gb then needs the next.
    assert proposal._first_fit(H200, [p3g, p3g, p1g]) == ([0, 0, 1], 2)
    # Seven 1g.18gb fit one H200 (placements 0-6); the eighth starts a second card.
    assert proposal._first_fit(H200, [p1g] * 8) == ([0] * 7 + [1], 2)
