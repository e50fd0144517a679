# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the sharing modes cost, measured on a real card: the calibration the advisor cites and
decides by.

A calibration file is what ``benchmarks/sharing_modes.py`` writes (format 1): the card, the
date, the command, per run every client's figures, a ``summary`` (each figure's median over
the runs) and its ``spread`` (per figure min, median, max and runs). The advisor reads the few
figures below, the medians, and records their spread. ``DEFAULT_DOCUMENT`` is the H200
calibration shipped with the collection (the subset of tests/fixtures/sharing-modes-h200.json
the advisor reads; a unit test keeps them equal), and the usage_advisor module's
``calibration`` option names a user's own file, measured on their card.

Which figures, and why: only ratios of contended figures measured in the same run, one mode
against another with the same clients in the same case (MPS against time-slicing, an equal
limit against none). They agreed within 7 % between two harnesses on the same H200 (MPS over
time-slicing 1.585 and 1.529), while the throughput of one small model "alone" differed by
20-45 % between harnesses and its p50 latency by 1.7x between two runs of one harness: a ratio
to "alone" carries that noise, so none is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import AdviceError

CALIBRATION_FORMAT = 1
BENCHMARK = "benchmarks/sharing_modes.py"

# summary key -> Calibration field: the figures the advisor reads, each a ratio of contended
# figures of one run (same clients, same case, two modes).
SUMMARY_FIELDS = {
    # five small inference services: MPS (no limit) / time-slicing, inferences per second together
    "mps_vs_timeslice_small_inference_throughput": "mps_vs_timeslice",
    "mps_equal_cap_vs_timeslice_small_inference_throughput": "mps_equal_cap_vs_timeslice",
    # a light service next to four heavy loops: under MPS (no limit, equal limit, limits by need) / time-sliced
    "mps_unlimited_vs_timeslice_small_next_to_heavy_throughput": "mps_unlimited_small_next_to_heavy",
    "mps_equal_cap_vs_timeslice_small_next_to_heavy_throughput": "mps_equal_cap_small_next_to_heavy",
    "mps_proportional_vs_timeslice_small_next_to_heavy_throughput": "mps_proportional_small_next_to_heavy",
    # the heaviest of the five small services under the equal limit / under MPS without limits
    "mps_equal_cap_vs_unlimited_heavier_service_throughput": "mps_equal_cap_heavier_service",
    # five heavy loops time-sliced / the same five under MPS: what switching costs
    "timeslice_vs_mps_five_heavy_throughput": "timeslice_heavy_total",
    "equal_cap_pct": "equal_cap_pct",
}

# The H200 calibration of 2026-12-02 (docs/performance.md, "Sharing modes on a real card"): one run.
DEFAULT_DOCUMENT = {
    "format": 1,
    "tool": "benchmarks/sharing_modes.py",
    "date": "2026-12-02T07:01:10+00:00",
    "card": {"name": "NVIDIA H200", "memory_total_mib": 143771, "driver_version": "580.159.04"},
    "runs_done": 1,
    "summary": {
        "mps_vs_timeslice_small_inference_throughput": 1.585,
        "mps_equal_cap_vs_timeslice_small_inference_throughput": 1.801,
        "mps_unlimited_vs_timeslice_small_next_to_heavy_throughput": 0.018,
        "mps_equal_cap_vs_timeslice_small_next_to_heavy_throughput": 1.553,
        "mps_proportional_vs_timeslice_small_next_to_heavy_throughput": 2.316,
        "mps_equal_cap_vs_unlimited_heavier_service_throughput": 0.46,
        "timeslice_vs_mps_five_heavy_throughput": 0.913,
        "equal_cap_pct": 20,
    },
}


@dataclass(frozen=True)
class Calibration:
    source: str                                 # where it was measured: card, driver, date (for the report)
    mps_vs_timeslice: float                     # five small inference services: MPS (no limit) / time-slicing, inferences/s
    mps_equal_cap_vs_timeslice: float           # ... MPS with an equal per-client cap / time-slicing
    mps_unlimited_small_next_to_heavy: float    # a small service next to four heavy loops, MPS without limits / time-sliced
    mps_equal_cap_small_next_to_heavy: float    # ... MPS with an equal cap for every client / time-sliced
    mps_proportional_small_next_to_heavy: float  # ... MPS with caps following each client's need / time-sliced
    mps_equal_cap_heavier_service: float        # the heaviest of five small services, equal cap / MPS without limits
    timeslice_heavy_total: float                # five heavy loops, time-sliced / under MPS (what switching costs)
    equal_cap_pct: float                        # the equal cap measured, % of the SMs per client
    runs: int = 1                               # runs the figures are medians of
    spread: dict = field(default_factory=dict, compare=False)   # field -> (min, max) over the runs

    def as_dict(self) -> dict:
        return dict(self.__dict__, spread={k: list(v) for k, v in self.spread.items()}, runs_text=self.spread_text())

    def low(self, name: str) -> float:
        """The lowest a figure was in the runs (the median when no spread is known)."""
        return self.spread.get(name, (getattr(self, name),) * 2)[0]

    def high(self, name: str) -> float:
        return self.spread.get(name, (getattr(self, name),) * 2)[1]

    @property
    def mps_serves_more(self) -> bool:
        """MPS served more small inferences than time-slicing in every run."""
        return self.low("mps_vs_timeslice") > 1.0

    @property
    def mps_starves_next_to_heavy(self) -> bool:
        """Next to heavy loops, a light service under MPS without limits served less than time-sliced,
        in every run."""
        return self.high("mps_unlimited_small_next_to_heavy") < 1.0

    def spread_text(self) -> str:
        """For the report: how many runs, and the spread of the figures the advisor reads."""
        if self.runs < 2 or not self.spread:
            return "one run: no spread measured"
        return "median of %d runs; spread %s" % (self.runs, ", ".join(
            "%s %.3g-%.3g" % (name, lo, hi) for name, (lo, hi) in sorted(self.spread.items())))


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
                              "run leaves it out; a file written before this figure existed gets it from %s "
                              "--summarize FILE): %s" % (origin, key, value, BENCHMARK, fix))
        values[field] = float(value)
    card = doc.get("card") or {}
    source = "%s, driver %s, %s (%s)" % (card.get("name", "unknown card"), card.get("driver_version", "?"),
                                         str(doc.get("date", "?"))[:10], doc.get("tool", BENCHMARK))
    spread = {}
    for key, name in SUMMARY_FIELDS.items():
        one = (doc.get("spread") or {}).get(key)
        if isinstance(one, dict) and all(isinstance(one.get(k), (int, float)) for k in ("min", "max")):
            spread[name] = (float(one["min"]), float(one["max"]))
    runs = doc.get("runs_done") if isinstance(doc.get("runs_done"), int) else len(doc.get("runs") or [None])
    return Calibration(source=source, runs=max(1, runs), spread=spread, **values)


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
