# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names shared by the planners, the renderers and (through the ``managed_label`` filter) the
roles: defined once here."""

from __future__ import annotations

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpushare.cluster"
# The label on every object the collection applies; pruning lists only objects carrying it.
MANAGED_LABEL = {MANAGED_BY_KEY: MANAGED_BY_VALUE}
# The same as a label selector (kubectl -l, k8s_info label_selectors).
MANAGED_SELECTOR = "%s=%s" % (MANAGED_BY_KEY, MANAGED_BY_VALUE)


def managed_label(_unused=None, selector: bool = False):
    """The managed-by label as a mapping, or as a label selector.

    Args:
        _unused: ignored; pipe ``none`` into the filter (``{{ none | gpushare.cluster.managed_label }}``).
        selector: false for the label as a mapping, true for a label selector string.

    Returns:
        ``{"app.kubernetes.io/managed-by": "gpushare.cluster"}``, or with ``selector=True`` the
        string ``app.kubernetes.io/managed-by=gpushare.cluster``.
    """
    return MANAGED_SELECTOR if selector else dict(MANAGED_LABEL)
