# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG solve report (docs/plan-format.md, ``mig_solve``) and the plan module's one line
when a layout is not proven optimal, written out by hand."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner

STAGES = [{"objective": "gpus_used", "status": "optimal", "value": 3},
          {"objective": "slice_memory_mib", "status": "time_limit", "value": 9},
          {"objective": "auto_gpus_converted", "status": "failed", "value": 1}]


def test_an_exact_solve_reports_no_seconds_and_a_time_limited_one_does():
    exact = mig_planner.MigSolve(exact=True, gap=0.0, seconds=1.26, time_limit=60.0, classes=4, stages=STAGES[:1])
    assert exact.as_dict() == {"exact": True, "gap": 0.0, "classes": 4, "stages": STAGES[:1]}
    limited = mig_planner.MigSolve(exact=False, gap=0.5, seconds=61.26, time_limit=60.0, classes=4, stages=STAGES)
    assert limited.as_dict() == {"exact": False, "gap": 0.5, "classes": 4, "stages": STAGES, "seconds": 61.3,
                                 "time_limit_s": 60.0}


def test_the_summary_line_names_the_stages_that_stopped_and_the_gap():
    assert mig_planner.summary_line(None) is None
    assert mig_planner.summary_line({"exact": True}) is None
    report = {"exact": False, "gap": 0.012345, "seconds": 61.26, "time_limit_s": 60, "stages": STAGES}
    assert mig_planner.summary_line(report, " (window night)") == (
        "MIG layout (window night): best found in 61.3 s, not proven optimal (slice_memory_mib, auto_gpus_converted "
        "stopped at the 60 s limit, gap 1.23 %)")
    # Every stage optimal: the stable re-planning stage stopped; no bound: the gap is unknown.
    assert mig_planner.summary_line({**report, "gap": None, "stages": STAGES[:1]}) == (
        "MIG layout: best found in 61.3 s, not proven optimal (gpus_repartitioned stopped at the 60 s limit, "
        "gap unknown)")
    # A tiny gap in %g's exponent form: 100 x 1e-7 = 1e-05 %.
    assert mig_planner.summary_line({**report, "gap": 1e-7}).endswith(", gap 1e-05 %)")


def _shortfall(demands, candidates) -> str:
    try:
        mig_planner.plan_mig(demands, candidates)
    except mig_planner.MigShortfall as err:
        return str(err)
    raise AssertionError("expected a shortfall")


# The MIG User Guide's H100/H200 table: at most 7 x 1g, 4 x 1g (double memory), 3 x 2g, 2 x 3g, 1 x 4g, 1 x 7g.
H200_PER_GPU = "7 x 1g.18gb, 4 x 1g.35gb, 3 x 2g.35gb, 2 x 3g.71gb, 1 x 4g.71gb, 1 x 7g.141gb"
ADVICE = "  Add GPUs with mode mig or auto, lower memory_gib, or allow more GPU models (gpu_model)."


def test_a_shortfall_names_the_replicas_and_what_each_model_offers():
    demands = [mig_planner.MigDemand("svc%d" % i, "t", 0, 140000, ("h200-141gb",)) for i in range(6)]
    demands.append(mig_planner.MigDemand("pinned", "t", 0, 1000, ("h200-141gb",), profile="2g.35gb"))
    candidates = [mig_planner.MigCandidate("n1", 0, "h200-141gb", True),
                  mig_planner.MigCandidate("n1", 1, "h200-141gb", True, layout=(("3g.71gb", 2),))]
    # Six replicas need the whole-card slice (143104 MiB = 139.75 GiB) and one GPU may be cut: short.
    # Memory is said in GiB, as memory_gib is written (MiB / 1024, two decimals).
    assert _shortfall(demands, candidates) == "\n".join([
        "the MIG services do not fit on the GPUs that may be cut with MIG:",
        "  - 6 replica(s) of svc0, svc1, svc2, svc3 and 2 more need a slice with at least 136.72 GiB on h200-141gb",
        "  - 1 replica(s) of pinned need 2g.35gb on h200-141gb",
        "  - h200-141gb: 1 GPU(s) free for MIG (+ fixed layouts {'3g.71gb': 2}); largest slice 139.75 GiB; per GPU "
        "at most " + H200_PER_GPU,
        ADVICE])


def test_replicas_no_slice_can_hold_are_named_by_size_the_first_twenty_sizes_only():
    demands = [mig_planner.MigDemand("big%02d" % i, "t", 0, 150000 + i, ("h200-141gb",)) for i in range(22)]
    text = _shortfall(demands, [mig_planner.MigCandidate("n1", 0, "h200-141gb", True)]).split("\n")
    # Largest first: 150021 down to 150002; the two smallest sizes are counted, not named.
    assert text[0] == "no GPU that may be cut with MIG has a slice that holds these replicas:"
    assert text[1] == "  - 1 replica(s) of big21 need a slice with at least 146.5 GiB on h200-141gb"
    assert text[20] == "  - 1 replica(s) of big02 need a slice with at least 146.49 GiB on h200-141gb"
    assert text[21:] == ["  - and 2 replica(s) of other sizes",
                         "  - h200-141gb: 1 GPU(s) free for MIG (+ fixed layouts none); largest slice 139.75 GiB; "
                         "per GPU at most " + H200_PER_GPU, ADVICE]


def test_a_shortfall_counts_declared_and_auto_gpus_and_lists_every_model_a_service_may_use():
    demands = [mig_planner.MigDemand("s%d" % i, "t", 0, 140000, ("h200-141gb",)) for i in range(5)]
    demands += [mig_planner.MigDemand("t%d" % i, "t", 0, 60000, ("h200-141gb", "h100-80gb")) for i in range(4)]
    candidates = [mig_planner.MigCandidate("n1", 0, "h200-141gb", True),
                  mig_planner.MigCandidate("n1", 1, "h200-141gb", False)]
    # Two GPUs (one declared mig, one auto) hold at most two whole-card slices: five are wanted.
    assert _shortfall(demands, candidates).split("\n")[1:4] == [
        "  - 5 replica(s) of s0, s1, s2, s3 and 1 more need a slice with at least 136.72 GiB on h200-141gb",
        "  - 4 replica(s) of t0, t1, t2, t3 need a slice with at least 58.59 GiB on h200-141gb, h100-80gb",
        "  - h200-141gb: 2 GPU(s) free for MIG (+ fixed layouts none); largest slice 139.75 GiB; per GPU at most "
        + H200_PER_GPU]


def test_twenty_sizes_are_all_named_and_a_fleet_of_fixed_layouts_offers_nothing_to_cut():
    demands = [mig_planner.MigDemand("big%02d" % i, "t", 0, 150000 + i, ("h200-141gb",)) for i in range(20)]
    fixed = mig_planner.MigCandidate("n1", 0, "h200-141gb", True, layout=(("3g.71gb", 2),))
    assert _shortfall(demands, [fixed]).split("\n")[20:] == [
        "  - 1 replica(s) of big00 need a slice with at least 146.48 GiB on h200-141gb",
        "  - h200-141gb: 0 GPU(s) free for MIG (+ fixed layouts {'3g.71gb': 2}); largest slice 0 GiB; per GPU at most "
        "nothing", ADVICE]


def test_valid_slices_follow_the_mig_user_guides_h200_placements():
    h200 = CATALOG["h200-141gb"]
    # Placements (MIG User Guide, H100/H200, 8 memory slices): 1g at 0-6, 1g (double memory) and 2g at even
    # starts (2g: 0, 2, 4), 3g at 0 and 4, 4g and 7g at 0; one media extension per GPU.
    valid = [[], [("1g.18gb", 0)], [("1g.18gb", 6)], [("7g.141gb", 0)], [("3g.71gb", 0), ("3g.71gb", 4)],
             [("3g.71gb", 4), ("4g.71gb", 0)], [("1g.18gb+me", 0)], [("2g.35gb", 4), ("1g.35gb", 6), ("3g.71gb", 0)],
             [("1g.18gb", 1), ("1g.18gb", 0), ("1g.18gb", 2)]]
    invalid = [[("bogus", 0)], [("1g.18gb", 7)], [("3g.71gb", 2)], [("2g.35gb", 6)], [("3g.71gb", 0), ("3g.71gb", 0)],
               [("1g.18gb", 0), ("1g.18gb", 1), ("1g.18gb", 0)], [("4g.71gb", 0), ("1g.18gb", 3)],
               [("1g.18gb+me", 0), ("1g.18gb+me", 1)], [("7g.141gb", 0), ("1g.18gb", 6)]]
    assert [mig_planner._valid_slices(h200, s) for s in valid] == [True] * len(valid)
    assert [mig_planner._valid_slices(h200, s) for s in invalid] == [False] * len(invalid)


def test_a_slice_belongs_to_its_services_team_and_auto_gpus_beside_mig_ones_are_cut_first():
    h200 = "h200-141gb"
    # n2's GPU 0 is declared mig (owner "ops"); the two 7g.141gb replicas need a second GPU: the auto GPU on n2,
    # already a MIG node, before n1's (which sorts first by name).
    candidates = [mig_planner.MigCandidate("n1", 0, h200, False, "ops"), mig_planner.MigCandidate("n2", 0, h200, True, "ops"),
                  mig_planner.MigCandidate("n2", 1, h200, False, "ops")]
    demands = [mig_planner.MigDemand("llm", "research", r, 140000, (h200,)) for r in (0, 1)]
    layouts = mig_planner.plan_mig(demands, candidates, carve_leftover=False)
    assert sorted(layouts) == [("n2", 0), ("n2", 1)]
    assert [(s.profile, s.team, s.workload) for key in sorted(layouts) for s in layouts[key].slices] == [
        ("7g.141gb", "research", "llm")] * 2


def test_two_profiles_of_one_memory_on_a_fixed_layout_both_serve():
    # 2g.35gb at 0 and 1g.35gb at 2 (MIG User Guide: both 33024 MiB, size 2): two replicas of 30000 MiB fit.
    fixed = mig_planner.MigCandidate("n1", 0, "h200-141gb", True, layout=(("1g.35gb", 1), ("2g.35gb", 1)))
    demands = [mig_planner.MigDemand("emb", "t", r, 30000, ("h200-141gb",)) for r in (0, 1)]
    layout = mig_planner.plan_mig(demands, [fixed], carve_leftover=False)[("n1", 0)]
    assert sorted((s.profile, s.workload) for s in layout.slices) == [("1g.35gb", "emb"), ("2g.35gb", "emb")]
