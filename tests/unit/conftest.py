# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.gpushare.cluster`` importable from the working tree.

The Makefile (target ``collection-link``) links .collections/ansible_collections/gpushare/cluster
to the repository root; this puts .collections on sys.path for the unit tests.
"""

import sys
from pathlib import Path

COLLECTIONS = Path(__file__).resolve().parents[2] / ".collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
