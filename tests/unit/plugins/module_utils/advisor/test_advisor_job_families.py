# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Daily Jobs of one family (``experiment-1``, ``experiment-2``, ...) are one service, not one
``not_enough_data`` line each (issue 33, item 15).

History: usage_synth.real_cluster_day(experiments=20): the last 20 days, one Job a day
``experiment-<n>`` (n = 1..20, one pod, 10:00-11:00 UTC on gpu01's GPU 3, 8 GiB), team training,
matched by no workload."""

from __future__ import annotations

import pytest

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import identity
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"labels": {"notebook-name": "eve-gpu"}}]}


@pytest.mark.parametrize("kind, owner, pod, expected", [
    ("Job", "experiment-12", "experiment-12-q9z8w", "experiment"),
    ("Job", "experiment-3", "experiment-3-q9z8w", "experiment"),
    ("PyTorchJob", "sweep-7", "sweep-7-master-0", "sweep"),
    ("Job", "fine-tune-29400012", "fine-tune-29400012-abcde", "fine-tune"),   # a CronJob's run, as before
    ("Job", "train-v2", "train-v2-x7k2p", "train-v2"),                        # a version, not a run number
    ("StatefulSet", "web-2", "web-2-0", "web-2"),                             # not a per-run object
])
def test_a_run_number_is_not_part_of_the_service(kind, owner, pod, expected):
    assert identity.service_name(kind, owner, pod) == expected


def test_twenty_daily_jobs_are_one_service():
    usage, truth = usage_synth.real_cluster_day(experiments=20)
    advice = ua.advise(usage, dict(example_inventory(), gpushare_advise_match=MATCH), check=False)
    names = [s["name"] for s in advice["services"]]
    assert not [n for n in names if n.startswith("experiment-")]
    (experiment,) = [s for s in advice["services"] if s["name"] == "experiment"]
    assert experiment["identity"]["pods"] == len(truth["experiment_pods"]) == 20
    # seen on 20 days (>= min_days 14), one GPU for an hour a day: batch, one whole GPU a run
    assert (experiment["status"], experiment["kind"], experiment["sharing"], experiment["run_gpus"]) == \
        ("ok", "batch", "whole", 1)
    (row,) = [u for u in advice["unmatched"] if u["name"].startswith("experiment")]
    assert row["pods"] == 20 and row["namespace"] == "training"
    assert not [s for s in advice["services"] if s["status"] == "not_enough_data"]
