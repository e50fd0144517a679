# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Series records for tsdb-backfill (tests/prometheus/tsdb-backfill):

    [uint32 little-endian N][N bytes of JSON {"labels", "start_ms", "step_ms", "count"}]
    [count float64 little-endian values]

repeated to EOF; the sample i is at start_ms + i * step_ms and a NaN value is no sample.
"""

from __future__ import annotations

import json
import struct

import numpy as np


def write_series(f, labels: dict, start_s: float, step_s: int, values) -> None:
    """Write one record of LABELS to the binary file F: VALUES every STEP_S seconds from
    START_S (Unix seconds, kept to the millisecond), as float64 with NaN kept."""
    vals = np.ascontiguousarray(values, dtype="<f8")
    if vals.ndim != 1:
        raise ValueError(f"write_series: values must be one-dimensional, got shape {vals.shape}")
    head = json.dumps({"labels": labels, "start_ms": int(round(start_s * 1000)),
                       "step_ms": int(step_s * 1000), "count": int(vals.size)},
                      ensure_ascii=False).encode("utf-8")
    f.write(struct.pack("<I", len(head)))
    f.write(head)
    f.write(vals.tobytes())
