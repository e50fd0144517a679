# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""usage._read_series asks for DCGM_FI_DEV_FB_FREE only for servers with a card the catalogue
does not know (its memory is used + free) and for DCGM_FI_DEV_GPU_UTIL only for servers with a
whole GPU without DCGM_FI_PROF_GR_ENGINE_ACTIVE; the other servers' answers would go unused."""

from __future__ import annotations

import numpy as np

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage as usage_mod
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.prometheus_client import RangeSeries

GRID = usage_mod._Grid(start=0.0, end=600.0, step=300, steps=3, window="1d")  # pylint: disable=protected-access
METRICS = (usage_mod.METRIC_MEMORY, usage_mod.METRIC_ACTIVE, usage_mod.METRIC_UTIL, usage_mod.METRIC_FREE)


class _Servers:
    """Per server (the selector's Hostname), the series of each metric it has."""
    url = "http://prometheus.test"

    def __init__(self, servers: dict):
        self.servers = servers      # host -> {metric: [labels, ...]}
        self.asked = []

    def query_range_arrays(self, expr, _start, _end, _step):
        metric, selector = expr.rstrip("}").split("{", 1)
        host = selector.split('"')[1]
        self.asked.append((host, metric))
        return [RangeSeries(labels, np.array([0.0, 300, 600]), np.array([1.0, 2, 3]))
                for labels in self.servers[host].get(metric, [])]


def _gpu(host, model, instance=None):
    labels = {"Hostname": host, "gpu": "0", "namespace": "ml", "pod": "p", "modelName": model}
    return dict(labels, GPU_I_ID=instance, GPU_I_PROFILE="1g.18gb") if instance else labels


def test_fb_free_and_gpu_util_are_read_only_for_the_servers_that_need_them():
    known = _gpu("known", "NVIDIA H200")
    unknown = _gpu("unknown", "NVIDIA Future GPU 999")
    no_dcp = _gpu("no-dcp", "NVIDIA H200")
    mig = _gpu("mig", "NVIDIA H200", instance="1")
    client = _Servers({
        "known": {usage_mod.METRIC_MEMORY: [known], usage_mod.METRIC_ACTIVE: [known], usage_mod.METRIC_UTIL: [known],
                  usage_mod.METRIC_FREE: [known]},
        "unknown": {usage_mod.METRIC_MEMORY: [unknown], usage_mod.METRIC_ACTIVE: [unknown],
                    usage_mod.METRIC_FREE: [unknown]},
        "no-dcp": {usage_mod.METRIC_MEMORY: [no_dcp], usage_mod.METRIC_UTIL: [no_dcp]},
        # a MIG instance never has GPU_UTIL: its missing GR_ENGINE_ACTIVE does not ask for it
        "mig": {usage_mod.METRIC_MEMORY: [mig]},
    })
    selectors = ['Hostname=~"%s"' % h for h in ("known", "unknown", "no-dcp", "mig")]
    series = usage_mod._read_series(client, GRID, selectors, METRICS, ("namespace", "pod"))  # pylint: disable=protected-access
    asked = {host: [m for h, m in client.asked if h == host] for host in ("known", "unknown", "no-dcp", "mig")}
    assert asked == {
        "known": [usage_mod.METRIC_MEMORY, usage_mod.METRIC_ACTIVE],
        "unknown": [usage_mod.METRIC_MEMORY, usage_mod.METRIC_ACTIVE, usage_mod.METRIC_FREE],
        "no-dcp": [usage_mod.METRIC_MEMORY, usage_mod.METRIC_ACTIVE, usage_mod.METRIC_UTIL],
        "mig": [usage_mod.METRIC_MEMORY, usage_mod.METRIC_ACTIVE],
    }
    by_node = {s.node: s for s in series}
    np.testing.assert_array_equal(by_node["unknown"].full("fb_free", 3), [1, 2, 3])
    np.testing.assert_allclose(by_node["no-dcp"].full("active", 3), [0.01, 0.02, 0.03], rtol=1e-6)   # percent / 100, float32
    assert by_node["known"].fb_free is None
