# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the advisor's rules choose for a single service, worked out by hand: the MIG profile,
the memory, the whole cards, the MPS clients and the thresholds.
From the NVIDIA MIG User Guide's H200 profile table (1g.18gb: 1 of 8 memory slices and 1 of 7
compute slices, 16384 MiB; 1g.35gb: 2 and 1, 33024 MiB; 2g.35gb: 2 and 2; 3g.71gb: 4 and 3, 71168
MiB; 4g.71gb: 4 and 4; 7g.141gb: 8 and 7, 143104 MiB), the cards' memory as nvidia-smi reports it
(H200 143771 MiB, L40S 46068 MiB) and the default Settings (20 % headroom, reservation above 60 %
of the card when flat above 97 % of the peak, saturation factor 1.01).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import rules
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from test_advisor_rules import _choose, _features  # the one-service harness of the rule tests


H200, L40S = CATALOG["h200-141gb"], CATALOG["l40s"]


@pytest.mark.parametrize("memory_mib, compute, profile", [
    (10000, 0.1, "1g.18gb"),
    (16384, 1 / 7, "1g.18gb"),          # exactly the slice: it still fits
    (16385, 0.1, "1g.35gb"),            # 2 memory slices: 1g.35gb before 2g.35gb (fewer compute slices)
    (20000, 0.2, "2g.35gb"),            # 0.2 > 1/7: two compute slices
    (60000, 0.4, "3g.71gb"),            # 3/7 = 0.43 holds 0.4
    (60000, 0.5, "4g.71gb"),            # 3/7 does not hold 0.5, 4/7 does
    (143104, 1.0, "7g.141gb"),
    (143105, 0.1, None),                # more than the whole-card instance
])
def test_smallest_h200_profile_that_holds_memory_and_compute(memory_mib, compute, profile):
    chosen = rules.choose_profile(H200, memory_mib, compute)
    assert (chosen.name if chosen else None) == profile


def test_a_card_without_mig_has_no_profile():
    assert rules.choose_profile(L40S, 1000, 0.01) is None


@pytest.mark.parametrize("mib, gib", [(0, 0.5), (1, 0.5), (512, 0.5), (513, 1), (1024, 1), (1025, 1.5),
                                      (1536, 1.5), (2048, 2), (9600, 9.5)])
def test_memory_rounds_up_to_half_a_gib(mib, gib):
    assert rules._gib_up(mib) == gib
    # Whole GiB stay integers, as a person writes them in the inventory (2, not 2.0).
    assert isinstance(rules._gib_up(mib), int) == (gib == int(gib))


def test_a_small_service_gets_the_smallest_slice_with_its_memory():
    # peak 8000 MiB + 20 % = 9600 MiB -> 9.5 GiB; 0.1 of a GPU; 1g.18gb holds both (16384 MiB, 1/7).
    out = _choose(_features())
    assert (out["rule"], out["mig_profile"], out["memory_need_mib"], out["memory_gib"], out["compute_need"]) == \
        ("mig-fits", "1g.18gb", 9600, 9.5, 0.1)
    assert not out["reservation"]


def test_a_slice_busy_at_its_limit_asks_for_the_next_larger_compute():
    # 10 % of the time at the limit of a 1/7 slice: compute = 1/7 x 1.01 = 0.1443 > 1/7 -> 2 compute slices.
    out = _choose(_features(saturated_share=0.1, saturated_fraction=1 / 7))
    assert out["compute_need"] == round(1 / 7 * 1.01, 4)
    assert out["mig_profile"] == "2g.35gb"
    # Below the share of time that counts (5 %), the measured 0.1 stands.
    assert _choose(_features(saturated_share=0.04, saturated_fraction=1 / 7))["mig_profile"] == "1g.18gb"


def test_unknown_activity_counts_as_no_compute():
    assert _choose(_features(compute=math.nan))["compute_need"] == 0.0


def test_a_flat_line_high_on_the_card_is_a_reservation_taken_as_it_is():
    # 100000 MiB >= 60 % of 143771 and its 5th percentile 99000 >= 97 % of it: no headroom added.
    out = _choose(_features(memory_peak_mib=100000.0, memory_p5_mib=99000.0))
    assert out["reservation"] and out["memory_need_mib"] == 100000
    # Not flat (5th percentile 90000 < 97000): a measured peak, plus 20 %.
    out = _choose(_features(memory_peak_mib=100000.0, memory_p5_mib=90000.0))
    assert not out["reservation"] and out["memory_need_mib"] == 120000
    # Flat but low (10000 MiB < 60 % of the card): a measured need, plus 20 %.
    out = _choose(_features(memory_peak_mib=10000.0, memory_p5_mib=9900.0))
    assert not out["reservation"] and out["memory_need_mib"] == 12000


def test_no_memory_samples_and_no_mig_slice_to_bound_it_is_not_enough_data():
    assert _choose(_features(memory_known=False))["status"] == "not_enough_data"


def test_notebooks_share_cards_by_memory():
    # 5 notebooks of 9600 MiB on 46068 MiB L40S: ceil(5 x 9600 / 46068) = 2 cards, ceil(5 / 2) = 3 replicas a card.
    out = _choose(_features(model="l40s", capacity_mib=46068.0, replicas=5), kind="notebook")
    assert (out["rule"], out["sharing"], out["replicas"], out["pool_gpus"], out["gpu_replicas"]) == \
        ("notebook-pool", "timeslice", 5, 2, 3)
    # One notebook still shares with a second one on one card.
    out = _choose(_features(model="l40s", capacity_mib=46068.0, replicas=1), kind="notebook")
    assert (out["replicas"], out["pool_gpus"], out["gpu_replicas"]) == (2, 1, 2)
    # 200 tiny notebooks: one card holds their memory, the inventory caps replicas at 64.
    out = _choose(_features(model="l40s", capacity_mib=46068.0, replicas=200, memory_peak_mib=100.0), kind="notebook")
    assert (out["replicas"], out["pool_gpus"], out["gpu_replicas"]) == (200, 1, 64)
    # On a card the catalogue does not know, each notebook's memory is all that is known of a card:
    # 5 notebooks -> 5 cards, and still 2 replicas a card (the least time-slicing takes).
    out = _choose(_features(model=None, replicas=5), kind="notebook")
    assert (out["pool_gpus"], out["gpu_replicas"]) == (5, 2)


def test_training_gets_as_many_whole_cards_as_its_memory_needs():
    # 200000 MiB + 20 % = 240000 MiB: 2 H200 (2 x 143771); memory 468.75 -> 469 half GiB = 234.5 GiB.
    out = _choose(_features(memory_peak_mib=200000.0, memory_p5_mib=2000.0), kind="training")
    assert (out["rule"], out["sharing"], out["gpus"], out["memory_gib"]) == ("runs-whole", "whole", 2, 234.5)
    # A pod that held 3 cards keeps 3 even though its memory fits one.
    out = _choose(_features(gpus_per_replica=3), kind="batch")
    assert (out["rule"], out["gpus"], out["memory_gib"]) == ("runs-whole", 3, 9.5)


def test_more_than_a_slice_short_of_the_card_is_a_whole_card():
    # 0.95 of a GPU: only 7g.141gb (7/7) holds it, and that is the whole card.
    out = _choose(_features(compute=0.95))
    assert (out["rule"], out["sharing"], out["gpus"]) == ("no-slice-fits", "whole", 1)


def test_a_whole_card_run_asks_for_no_more_memory_than_the_card_has():
    # 119750 MiB + 20 % = 143700 MiB: one H200 (143771 MiB); 143700 / 512 = 280.7 -> 281 half GiB = 140.5 GiB,
    # more than the card's int(143771 / 1024) = 140 GiB, so 140.
    out = _choose(_features(memory_peak_mib=119750.0, memory_p5_mib=2000.0), kind="training")
    assert (out["gpus"], out["memory_gib"]) == (1, 140)


def test_a_slice_is_never_given_more_memory_than_it_has():
    # 27500 MiB + 20 % = 33000 MiB -> 1g.35gb (33024 MiB = 32.25 GiB); 33000 / 512 = 64.5 -> 65 half GiB = 32.5,
    # more than the slice, so 32.25.
    out = _choose(_features(memory_peak_mib=27500.0))
    assert (out["mig_profile"], out["memory_gib"]) == ("1g.35gb", 32.25)


def test_thresholds_are_at_least():
    # Each notebook threshold exactly met (Settings: "at least"): a notebook.
    notebook = _features(presence=0.5, idle_share=0.5, idle_memory_mib=512.0, active_share=0.02, day_concentration=0.9)
    assert rules.detect_kind(notebook)[0] == "notebook"
    # At its limit exactly 5 % of the time (saturated_share: "at least"): the next larger compute.
    assert _choose(_features(saturated_share=0.05, saturated_fraction=1 / 7))["mig_profile"] == "2g.35gb"


def test_a_pod_without_memory_on_an_unknown_card_keeps_its_one_gpu():
    # No memory used and a card the catalogue does not know: nothing to divide by, the GPU the pod held.
    out = _choose(_features(model=None, memory_peak_mib=0.0, memory_p5_mib=0.0))
    assert (out["rule"], out["gpus"]) == ("whole-default", 1)


def test_a_run_on_one_card_asks_for_its_need_rounded_up():
    # 8000 MiB + 20 % = 9600 MiB -> 9.5 GiB on one H200 (140 GiB): 9.5, not the need floored to 9.
    out = _choose(_features(), kind="batch")
    assert (out["gpus"], out["memory_gib"]) == (1, 9.5)
    # On a card the catalogue does not know, the same: its size is unknown, so nothing caps the need.
    out = _choose(_features(model=None), kind="batch")
    assert (out["gpus"], out["memory_gib"]) == (1, 9.5)


def test_three_cards_hold_what_three_cards_have():
    # 359000 MiB + 20 % = 430800 MiB: ceil(430800 / 143771) = 3 H200; 430800 / 512 = 841.4 -> 842 half GiB
    # = 421 GiB, and 3 x 143771 MiB = 431313 MiB = 421.2 GiB hold it, so 421 (not 420).
    out = _choose(_features(memory_peak_mib=359000.0, memory_p5_mib=2000.0), kind="training")
    assert (out["gpus"], out["memory_gib"]) == (3, 421)


def test_the_halves_of_the_window_differ_when_a_field_the_cluster_reads_differs():
    """signature() is what _check_stability compares between the two halves of the window: two
    choices that differ in the sharing, the GPUs per replica or the cards of a pool must differ there."""
    def differ(a, b):
        return rules.signature(a) != rules.signature(b)
    # The sharing alone: a whole card, or a DRA request (neither has a profile, a pool, or other GPUs).
    assert differ(_choose(_features(compute=0.95)), _choose(_features(compute=0.95), dra=True))
    # The GPUs alone: a run on 1 H200 (9600 MiB) or on 2 (240000 MiB).
    assert differ(_choose(_features(), kind="training"),
                  _choose(_features(memory_peak_mib=200000.0), kind="training"))
    # The cards of the pool alone: 2 notebooks of 9600 MiB on one L40S, or 5 on 2.
    l40s = dict(model="l40s", capacity_mib=46068.0)
    assert differ(_choose(_features(replicas=2, **l40s), kind="notebook"),
                  _choose(_features(replicas=5, **l40s), kind="notebook"))
    # The same choice twice does not differ.
    assert not differ(_choose(_features()), _choose(_features()))


def test_mps_clients_follow_the_memory_and_replicas_fill_cards():
    # 7980 MiB + 20 % = 9576 MiB: 46068 // 9576 = 4 clients per L40S (compute 0.05 would allow 20).
    out = _choose(_features(model="l40s", capacity_mib=46068.0, pooled=True, compute=0.05, memory_peak_mib=7980.0))
    assert (out["rule"], out["sharing"], out["replicas"], out["gpu_replicas"], out["pool_gpus"]) == \
        ("mps-co-located", "mps", 1, 4, 1)
    # 6 replicas of 4 clients a card: ceil(6 / 4) = 2 cards.
    out = _choose(_features(model="l40s", capacity_mib=46068.0, pooled=True, compute=0.05, memory_peak_mib=7980.0,
                            replicas=6))
    assert (out["replicas"], out["gpu_replicas"], out["pool_gpus"]) == (6, 4, 2)


def test_a_reservation_is_at_least_its_share_of_the_card_and_at_least_that_flat():
    # A 100000 MiB device: 60 % is 60000 MiB; 97 % of 60000 is 58200. Both met exactly: a reservation, no headroom.
    out = _choose(_features(capacity_mib=100000.0, memory_peak_mib=60000.0, memory_p5_mib=58200.0))
    assert out["reservation"] and out["memory_need_mib"] == 60000


def _on_card(name, act, sharers=None):
    """A service that saw one card (key ("n1", 0, None)) with that activity, and its own pods there per step."""
    device = SimpleNamespace(act=np.array(act), sharers=None if sharers is None else np.array(sharers))
    return SimpleNamespace(name=name, devices={("n1", 0, None): device})


def test_neighbours_are_measured_while_the_service_was_there_busiest_first_then_by_name():
    # The service's pods were on the card at steps 0-3 only; the others' p95 over those steps (numpy's linear
    # percentile of 4 values: 0.2, 0.2, 0.2, 0.2 -> 0.2), not over steps 4-7 when it was gone (0.9).
    me = _on_card("me", [0.1] * 8, sharers=[1, 1, 1, 1, 0, 0, 0, 0])
    others = [_on_card(name, [p] * 4 + [0.9] * 4) for name, p in (("zeta", 0.2), ("beta", 0.6), ("alpha", 0.6))]
    ctx = SimpleNamespace(settings=rules.Settings(), services={s.name: s for s in [me] + others})
    assert rules.neighbours(ctx, me) == (("alpha", 0.6), ("beta", 0.6), ("zeta", 0.2))


def test_a_server_counts_as_mig_when_a_gpu_or_one_of_its_windows_is_in_mode_mig():
    def gpu(mode, *windows):
        return SimpleNamespace(mode=mode, windows=[SimpleNamespace(mode=w) for w in windows])
    nodes = [SimpleNamespace(name="own", gpus=[gpu("whole"), gpu("mig")]),
             SimpleNamespace(name="by-night", gpus=[gpu("timeslice", "mig")]),
             SimpleNamespace(name="never", gpus=[gpu("timeslice", "whole"), gpu("whole")])]
    assert rules._mig_nodes(SimpleNamespace(inventory=SimpleNamespace(nodes=nodes))) == ("own", "by-night")


def test_a_compute_need_within_the_tolerance_of_a_slice_fits_it():
    # 1/7 of a GPU plus the 1e-9 that choose_profile forgives (floating-point noise): still one compute slice.
    assert rules.choose_profile(H200, 10000, 1 / 7 + 1e-9).name == "1g.18gb"


def test_a_choice_without_its_own_gpus_or_profile_says_one_gpu_and_no_profile():
    # A MIG slice, a pool and a DRA request are on one GPU per replica; none but the slice has a profile.
    for out in (_choose(_features()), _choose(_features(replicas=4), kind="notebook"), _choose(_features(), dra=True)):
        assert out["gpus"] == 1, out
    for out in (_choose(_features(compute=0.95)), _choose(_features(), dra=True)):
        assert "mig_profile" in out and out["mig_profile"] is None, out


def test_the_rules_read_the_advisors_settings():
    # A pooled small service on an H200: 1g.18gb (16384 MiB) holds its 9600 MiB. By default MIG is kept unless the
    # slice wastes 4x the need (38400 MiB); with mps_mig_waste 1.0 the slice wastes enough and MPS is proposed.
    pooled = _features(pooled=True)
    assert _choose(pooled)["rule"] == "mig-fits"
    assert _choose(pooled, settings=rules.Settings(mps_mig_waste=1.0))["rule"] == "mps-co-located"
