# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""usage._read_series reads each metric through PrometheusClient.query_range_arrays and puts
the samples on the grid: a sample at its step, NaN where none came, samples off the grid
(before its start, after its end, between steps rounded to the nearest) as the grid rounds them."""

from __future__ import annotations

import numpy as np

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage as usage_mod
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.prometheus_client import RangeSeries

NAN = float("nan")


class _Arrays:
    """Answers range queries only as arrays; any other call fails the test."""
    url = "http://prometheus.test"

    def __init__(self, answers):
        self.answers = answers      # metric -> [RangeSeries]
        self.asked = []

    def query_range_arrays(self, expr, start, end, step):
        self.asked.append((expr, start, end, step))
        return self.answers[expr.split("{", 1)[0]]


def test_series_are_read_as_arrays_onto_the_grid():
    grid = usage_mod._Grid(start=1000.0, end=2200.0, step=300, steps=5, window="1d")  # pylint: disable=protected-access
    labels = {"Hostname": "gpu01", "gpu": "1", "namespace": "ml", "pod": "p-0", "modelName": "NVIDIA H200"}
    client = _Arrays({
        # at 1000, 1300, 1900 (2200 missing); 700 is before the grid, 2500 after it
        usage_mod.METRIC_MEMORY: [RangeSeries(labels, np.array([700.0, 1000, 1300, 1900, 2500]),
                                              np.array([9.0, 10, 11, 13, 99]))],
        # 1590 is nearest to 1600; 2200 is the last point
        usage_mod.METRIC_ACTIVE: [RangeSeries(labels, np.array([1590.0, 2200]), np.array([0.5, -0.0]))],
    })
    series = usage_mod._read_series(client, grid, ['Hostname=~"gpu01"'],  # pylint: disable=protected-access
                                    (usage_mod.METRIC_MEMORY, usage_mod.METRIC_ACTIVE), ("namespace", "pod"))
    assert [e[0] for e in client.asked] == ['DCGM_FI_DEV_FB_USED{Hostname=~"gpu01"}',
                                            'DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname=~"gpu01"}']
    assert [(s.node, s.gpu, s.namespace, s.pod) for s in series] == [("gpu01", 1, "ml", "p-0")]
    np.testing.assert_array_equal(series[0].full("fb_used", 5), [10, 11, NAN, 13, NAN])
    np.testing.assert_array_equal(series[0].full("active", 5), [NAN, NAN, 0.5, NAN, 0.0])
