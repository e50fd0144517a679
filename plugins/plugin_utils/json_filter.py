# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One wrapper for the collection's filters: a pure Python function of module_utils run on
plain JSON data, its errors turned into filter errors naming the filter."""

from __future__ import annotations

import functools
import json

from ansible.errors import AnsibleFilterError


def plain(value):
    """Plain JSON data (dict, list, str, int, float, bool, None) of an Ansible value
    (templated strings, lazy containers), as a controller script fed JSON would see it."""
    return json.loads(json.dumps(value))


def json_filter(name: str, function, errors: tuple = (ValueError,)):
    """The filter ``gpushare.cluster.<name>``: ``function`` on plain arguments, a plain result."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        try:
            return plain(function(*plain(list(args)), **plain(kwargs)))
        except errors as exc:
            raise AnsibleFilterError("gpushare.cluster.%s: %s" % (name, exc)) from exc
    # The filter's name first: help() and a traceback show which filter runs which function.
    run.__doc__ = "gpushare.cluster.%s: %s.%s (see its docstring).\n\n%s" % (
        name, function.__module__.rsplit(".", 1)[-1], function.__name__, function.__doc__ or "")
    return run
