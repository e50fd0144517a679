# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Training runs by what a run takes (issue 33, items 9, 12, 13): a job that changes shape
inside the window (a PyTorchJob of 2 pods x 1 GPU, then a TrainJob of 1 pod x 2 GPUs) takes the
same 2 GPUs a run and is stable; a run's GPUs are stated per run, with its pods; a training
job's flat memory is its need (no serving reservation), and a replica's memory is compared with
the memory of all the GPUs it holds.

Expected answers come from the histories usage_synth.real_cluster_day builds: every night's run
holds GPU 2 and GPU 3 of gpu01, 19:30-06:30, FINE_TUNE_MIB (or ``fine_tune_mib``) flat on each."""

from __future__ import annotations

import numpy as np
import pytest

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import render_advice
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"labels": {"notebook-name": "eve-gpu"}}]}
GIB = 1024.0


def _advise(check=True, **history):
    usage, truth = usage_synth.real_cluster_day(**history)
    return ua.advise(usage, dict(example_inventory(), gpushare_advise_match=MATCH), check=check), truth


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


def _entry(advice, name):
    return next(w for w in advice["proposal"]["workloads"] if w["name"] == name)


def test_a_job_that_changes_shape_takes_the_same_gpus_a_run():
    """Nights 0-13: PyTorchJob, master on GPU 2 and worker on GPU 3; nights 14-27: a TrainJob's one
    pod on both. 2 GPUs a run throughout: stable, and the latest shape (1 pod x 2 GPUs) is proposed,
    2 GPUs in all, not gpus 2 x replicas 2."""
    advice, truth = _advise(fine_tune_shape="changes")
    fine = _svc(advice, "fine-tune")
    assert fine["status"] == "ok", fine.get("reason")
    assert fine["halves"][0] == fine["halves"][1]
    assert (fine["gpus"], fine["replicas"], fine["run_gpus"]) == (2, 1, 2)
    entry = _entry(advice, "fine-tune")
    assert entry.get("gpus", 1) * entry.get("replicas", 1) == 2
    assert (entry["gpus"], entry.get("replicas", 1)) == (2, 1)
    assert "2 whole GPUs per run (1 pod x 2 GPUs)" in fine["why"]
    assert "earlier pods held 1 GPU each" in fine["why"]
    # nights -1 (the morning of day 0) to 13: 2 pods each; nights 14 to 27: 1 pod each
    assert fine["identity"]["pods"] == len(truth["fine_tune_pods"]) == 15 * 2 + 14
    assert advice["plan_check"]["status"] == "accepted"


def test_a_multi_pod_run_is_stated_per_run_with_its_pods():
    """Every run a PyTorchJob of 2 pods x 1 GPU: 2 GPUs a run, proposed as replicas 2 of 1 GPU."""
    advice, _truth = _advise(fine_tune_shape="two-pods")
    fine = _svc(advice, "fine-tune")
    assert (fine["status"], fine["gpus"], fine["replicas"], fine["run_gpus"]) == ("ok", 1, 2, 2)
    assert "2 whole GPUs per run (2 pods x 1 GPU)" in fine["why"]
    assert render_advice.choice_text(fine) == "whole, 2 GPUs per run (2 pods x 1 GPU)"
    entry = _entry(advice, "fine-tune")
    assert (entry.get("gpus", 1), entry["replicas"]) == (1, 2)
    # a pod's memory is one GPU's: 19137 MiB flat, plus 20 % headroom
    assert fine["memory_need_mib"] == pytest.approx(usage_synth.FINE_TUNE_MIB * 1.2, rel=0.01)
    report = render_advice.report_markdown(advice, [], "accepted")
    assert "1 whole GPU per run" not in report
    assert advice["plan_check"]["status"] == "accepted"


def test_a_training_jobs_flat_memory_is_its_need_over_the_gpus_it_holds():
    """116 GiB flat on each of its 2 GPUs: 232 GiB a replica, 165 % of one device but 83 % of the
    two it holds; a training job's allocator cache, not a serving framework's reservation: the
    need is the peak plus 20 %."""
    per_gpu = 116 * 1024
    advice, _truth = _advise(check=False, fine_tune_mib=per_gpu)
    fine = _svc(advice, "fine-tune")
    assert fine["reservation"] is False
    assert fine["memory_need_mib"] == pytest.approx(2 * per_gpu * 1.2, rel=0.005)
    assert "over its 2 GPUs (116.0 GiB each)" in fine["memory_note"]
    assert fine["gpus"] == 2
    report = render_advice.report_markdown(advice, [], "not checked")
    assert "165 %" not in report and "reservation" not in fine["memory_note"]
    # vLLM on one GPU, flat at 94801 MiB of the H200's 143771: still a reservation, as it is
    vllm = _svc(advice, "vllm-chat")
    assert vllm["reservation"] and vllm["memory_need_mib"] == pytest.approx(94801, abs=20)


@pytest.mark.parametrize("per_gpu_mib, reservation", [(51200, False), (92160, True)])
def test_a_serving_replica_on_two_gpus_is_compared_with_both(per_gpu_mib, reservation):
    """A vLLM replica holding gpu01's GPUs 0 and 3, flat: 2 x 50 GiB is 71 % of one H200 but
    36 % of the two it holds (a need, plus 20 %); 2 x 90 GiB is 64 % of both (a reservation)."""
    b = usage_synth.Builder(days=28, seed=5)
    pod = "vllm-chat-6c9f7d8b5d-x2k9p"
    b.pod("prod-serving", pod, "ReplicaSet", "vllm-chat-6c9f7d8b5d")
    act = 0.5 + b.noise(0.05)
    for gpu in (0, 3):
        b.device("gpu01", gpu, "prod-serving", pod, per_gpu_mib + np.abs(b.noise(1)), act)
    advice = ua.advise(b.usage(), example_inventory(), check=False)
    vllm = _svc(advice, "vllm-chat")
    assert (vllm["status"], vllm["kind"], vllm["gpus"]) == ("ok", "serving", 2)
    assert vllm["reservation"] is reservation
    peak = 2 * per_gpu_mib
    assert vllm["memory_need_mib"] == pytest.approx(peak if reservation else peak * 1.2, rel=0.002)
