# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.gpushare.cluster`` and the shared test helpers importable.

The Makefile (target ``collection-link``) links .collections/ansible_collections/gpushare/cluster
to the repository root; this puts .collections on sys.path for the unit tests, and tests/unit
(``inventories``, ``playbooks``, ``mutations``, ``usage_synth``) for the tests under
tests/unit/plugins/, which mirror plugins/.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for extra in (HERE.parents[1] / ".collections", HERE):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))
