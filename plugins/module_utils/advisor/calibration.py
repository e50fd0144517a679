# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the sharing modes cost, measured on a real card: the calibration the advisor cites.

A calibration file is what ``benchmarks/sharing_modes.py`` writes (format 1): the card, the
date, the command and a ``summary`` of ratios. The advisor reads the few ratios below from it;
``DEFAULT_DOCUMENT`` is the H200 run shipped with the collection (the subset of
tests/fixtures/sharing-modes-h200.json the advisor reads; a unit test keeps them equal), and the
usage_advisor module's ``calibration`` option names a user's own file, measured on their card.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import AdviceError

CALIBRATION_FORMAT = 1
BENCHMARK = "benchmarks/sharing_modes.py"

# summary key -> Calibration field: the ratios the advisor reads.
SUMMARY_FIELDS = {
    "mps_vs_timeslice_small_inference_throughput": "mps_vs_timeslice",
    "mps_equal_cap_vs_timeslice_small_inference_throughput": "mps_equal_cap_vs_timeslice",
    "timeslice_small_next_to_heavy_throughput_ratio": "timeslice_small_next_to_heavy",
    "mps_unlimited_small_next_to_heavy_throughput_ratio": "mps_unlimited_small_next_to_heavy",
    "mps_limited_small_next_to_heavy_throughput_ratio": "mps_equal_cap_small_next_to_heavy",
    "mps_proportional_small_next_to_heavy_throughput_ratio": "mps_proportional_small_next_to_heavy",
    "mps_equal_cap_heavier_service_ratio": "mps_equal_cap_heavier_service",
    "timeslice_five_heavy_total_vs_one_alone": "timeslice_heavy_total",
    "equal_cap_pct": "equal_cap_pct",
}

# The H200 run of 2026-12-02 (docs/performance.md, "Sharing modes on a real card").
DEFAULT_DOCUMENT = {
    "format": 1,
    "tool": "benchmarks/sharing_modes.py",
    "date": "2026-12-02T07:01:10+00:00",
    "card": {"name": "NVIDIA H200", "memory_total_mib": 143771, "driver_version": "580.159.04"},
    "summary": {
        "mps_vs_timeslice_small_inference_throughput": 1.585,
        "mps_equal_cap_vs_timeslice_small_inference_throughput": 1.801,
        "timeslice_small_next_to_heavy_throughput_ratio": 0.402,
        "mps_unlimited_small_next_to_heavy_throughput_ratio": 0.007,
        "mps_limited_small_next_to_heavy_throughput_ratio": 0.624,
        "mps_proportional_small_next_to_heavy_throughput_ratio": 0.931,
        "mps_equal_cap_heavier_service_ratio": 0.397,
        "timeslice_five_heavy_total_vs_one_alone": 0.93,
        "equal_cap_pct": 20,
    },
}


@dataclass(frozen=True)
class Calibration:
    source: str                                 # where it was measured: card, driver, date (for the report)
    mps_vs_timeslice: float                     # five small inference services: MPS (no limit) / time-slicing, inferences/s
    mps_equal_cap_vs_timeslice: float           # ... MPS with an equal per-client cap / time-slicing
    timeslice_small_next_to_heavy: float        # a small service next to four heavy loops, of its throughput alone
    mps_unlimited_small_next_to_heavy: float    # ... under MPS without limits (heavy neighbours starve it)
    mps_equal_cap_small_next_to_heavy: float    # ... under MPS with an equal cap for every client
    mps_proportional_small_next_to_heavy: float  # ... under MPS with caps following each client's need
    mps_equal_cap_heavier_service: float        # the heaviest small service under the equal cap, of its throughput alone
    timeslice_heavy_total: float                # five heavy loops time-sliced, all together / one alone (switching)
    equal_cap_pct: float                        # the equal cap measured, % of the SMs per client

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def from_document(doc, origin: str = "the calibration") -> Calibration:
    """The ratios of a calibration document (format 1); AdviceError naming what is missing."""
    fix = "run %s on a GPU node and pass its --out file (format %d)" % (BENCHMARK, CALIBRATION_FORMAT)
    if not isinstance(doc, dict) or doc.get("format") != CALIBRATION_FORMAT or not isinstance(doc.get("summary"), dict):
        raise AdviceError("%s is not a calibration file of format %d (a JSON object with 'format' and 'summary'): %s"
                          % (origin, CALIBRATION_FORMAT, fix))
    summary = doc["summary"]
    values = {}
    for key, field in SUMMARY_FIELDS.items():
        value = summary.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise AdviceError("%s: summary.%s is %r, a number of at least 0 is needed (a mode the benchmark could not "
                              "run leaves it out): %s" % (origin, key, value, fix))
        values[field] = float(value)
    card = doc.get("card") or {}
    source = "%s, driver %s, %s (%s)" % (card.get("name", "unknown card"), card.get("driver_version", "?"),
                                         str(doc.get("date", "?"))[:10], doc.get("tool", BENCHMARK))
    return Calibration(source=source, **values)


def load(path: str | None) -> Calibration:
    """The calibration in the file at ``path``, or the shipped H200 one without a path."""
    if not path:
        return DEFAULT
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as failure:
        raise AdviceError("calibration %s cannot be read (%s): give the JSON file %s wrote, or leave the option "
                          "out for the H200 calibration shipped with the collection" % (path, failure, BENCHMARK)) from None
    return from_document(doc, "calibration %s" % path)


DEFAULT = from_document(DEFAULT_DOCUMENT, "the shipped H200 calibration")
