# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cut H200 that the MIG planner's hand-worked tests re-plan from. Placements and memory from
the NVIDIA MIG User Guide's H200 table: on the 8-slice grid 1g.18gb starts at 0..6 (16384 MiB),
2g.35gb at 0, 2, 4 (33024 MiB), 3g.71gb at 0 or 4 (71168 MiB)."""

H200 = "h200-141gb"
GIB = 1024
# Now: 2g.35gb at 0 (service a), 1g.18gb at 2 and 3 (service b's replicas), 3g.71gb at 4 spare.
NOW = (("2g.35gb", 0, "a", 0), ("1g.18gb", 2, "b", 0), ("1g.18gb", 3, "b", 1), ("3g.71gb", 4, None, None))
CUT = (("1g.18gb", 2), ("2g.35gb", 1), ("3g.71gb", 1))
A100 = "a100-80gb"      # the other MIG model some of the tests mix in
