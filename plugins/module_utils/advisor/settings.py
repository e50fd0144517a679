# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor's settings: every threshold it measures and decides by, in one place (the
rules in ``rules.py`` name the fields they read; docs/advisor.md lists them), with its error
and the format of its output."""

from __future__ import annotations

from dataclasses import dataclass

ADVICE_FORMAT = "gpushare.cluster/advice-v1"
MIB_PER_GIB = 1024


class AdviceError(Exception):
    """The advice cannot be given (no data, missing metrics, too little history); the
    message names what is missing and what to do."""


@dataclass(frozen=True)
class Settings:
    days: int = 28                    # history read, ending at `end`
    min_days: int = 14                # less history than this: not enough data, no proposal
    step: int = 300                   # seconds between samples
    memory_headroom: float = 0.2      # memory needed = peak x (1 + headroom)
    compute_percentile: float = 95.0  # compute needed = this percentile of activity (whole-GPU terms)
    quota_percentile: float = 90.0    # team quota = this percentile of GPUs in use at once
    idle_activity: float = 0.05       # below this activity (of the device) a sample is idle
    max_gap: float = 0.1              # a node with more of its samples missing is not enough data
    min_window_hours: int = 6         # shortest sharing window proposed from idle hours
    reservation_share: float = 0.6    # flat memory above this share of the device: a framework's reservation
    stability: bool = True            # the choice must hold in both halves of the window
    # -- history: how much is enough
    min_days_slack_hours: float = 1.0     # history this much short of min_days still counts (scrapes start late)
    outage_hours: float = 1.0             # a node reporting nothing this long is listed in the report (outages)
    # -- memory and compute needed (before the choice rules)
    flat_percentile: float = 5.0          # memory's low percentile, compared with its peak to find a flat line
    reservation_flatness: float = 0.97    # that percentile at least this share of the peak: flat (a reservation)
    saturated_activity: float = 0.95      # a MIG slice at least this busy (of the instance) is at its limit
    saturated_share: float = 0.05         # at its limit at least this share of the time: its compute is a lower bound
    saturated_compute_factor: float = 1.01  # ... and the compute asked is its slice's share x this (the next larger)
    # -- features of the pattern
    pooled_share: float = 0.5             # pods outnumber their devices in at least this share of samples: one pool
    # several pods on a device in at least this share of its samples: shared (copied to every pod, or
    # given to one pod of several); less is a series lingering after its pod
    duplicated_share: float = 0.02
    busy_span_hours: int = 12             # the span of the day (busiest hours, round the clock) activity is measured in
    idle_hour_percentile: float = 95.0    # an hour of the day is idle when this percentile of its samples is idle
    # -- kind rules (KIND_RULES in rules.py)
    notebook_idle_share: float = 0.5      # notebook: idle at least this share of the time it is up,
    notebook_idle_memory_mib: float = 512.0   # holding at least this much memory (median MiB) while idle,
    notebook_active_share: float = 0.02   # active at least this share of the time it is up,
    notebook_day_concentration: float = 0.9   # with at least this share of its activity within busy_span_hours
    serving_presence: float = 0.9         # serving: up at least this share of the window
    training_run_hours: float = 2.0       # runs of this median length or longer are training, shorter ones batch,
    batch_max_gpus: int = 1               # unless a pod holds more GPUs than this (then training)
    # -- MPS (the mps-co-located rule; the measured reasons come from the calibration)
    mps_heavy_compute: float = 0.5        # a neighbour this busy (p95, of the card) on a card it shared is heavy
    mps_mig_waste: float = 4.0            # on a MIG card, MPS only where the smallest slice holding the need
    #                                       has at least this many times the memory needed
    # -- buying
    buy_max_cards: int = 16               # a model needing more cards than this for one replica is no option
