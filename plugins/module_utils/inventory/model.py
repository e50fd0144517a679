# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory model: group_vars and host_vars in, typed frozen objects out.

``load_inventory(variables)`` reads the ``gpushare_*`` variables (the shapes are
documented in the sample inventories) and either returns an ``Inventory`` or raises
``PlanInvalid`` listing every problem, each with its inventory path. Reading is strict:
unknown keys, wrong types and booleans written as strings ("yes", "true") are refused,
because a silently ignored typo in a quota is worse than an error.
"""

from __future__ import annotations

import datetime
import math
import re
import zoneinfo
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog, mig_geometry
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions, dynamic_mig
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid, Problems
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import (
    AUTO, DRA, GPU_MODES, ISOLATION_TO_SHARING, MIG, MODES, MPS, TIMESLICE, WHOLE, WINDOW_MODES, WORKLOAD_SHARING,
    isolation_choices, modes_without_mig, shares_device)

WORKLOAD_KINDS = ("serving", "notebook", "training", "batch")
# The Kubernetes distributions (one table: distributions.py), the default first.
DISTRIBUTIONS = distributions.NAMES
MIG_LEFTOVER = ("carve", "leave")
CPU_MEMORY_QUOTA = ("ignore", "proportional")
REPLAN = ("stable", "optimal")
# Pod Security admission levels a team namespace may have, strictest (the default) first.
# "privileged" is not one: it lets a member run a pod that is root on a GPU server.
POD_SECURITY_LEVELS = ("restricted", "baseline")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
CLOCK = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
# Hours written as one range ("20:00-06:00", "9:00 to 17:00") where a window wants from and until.
CLOCK_RANGE = re.compile(r"^\s*(\d{1,2}:\d{2})\s*(?:-|\u2013|to|until)\s*(\d{1,2}:\d{2})\s*$")
WINDOW_FORMAT = ('from: "HH:MM" and until: "HH:MM", each quoted; a window may cross midnight '
                 '(from: "20:00", until: "06:00")')
MIB_PER_GIB = 1024


@dataclass(frozen=True)
class Team:
    name: str
    namespaces: tuple[str, ...]
    priority: int
    production: bool
    lend: bool
    borrow: bool
    borrowing_limit: int | None
    lending_limit: int | None
    members: tuple[str, ...]
    path: str
    # The Pod Security admission level of the team's namespaces (POD_SECURITY_LEVELS).
    pod_security: str = POD_SECURITY_LEVELS[0]


@dataclass(frozen=True)
class SharingWindow:
    """A daily window in which a GPU is shared differently (e.g. lent whole at night)."""
    name: str
    start: str
    end: str
    mode: str
    team: str | None
    replicas: int | None
    path: str


@dataclass(frozen=True)
class GpuSpec:
    index: int
    model: str
    mode: str
    team: str | None
    replicas: int | None
    mig_layout: tuple[tuple[str, int], ...] | None
    windows: tuple[SharingWindow, ...]
    path: str


@dataclass(frozen=True)
class Node:
    name: str
    model: str
    gpus: tuple[GpuSpec, ...]
    cpus: int | None
    memory_gib: int | None
    host_driver: bool
    dra: bool
    path: str


@dataclass(frozen=True)
class Workload:
    name: str
    team: str
    kind: str
    sharing: str
    memory_gib: float
    replicas: int
    gpus: int
    gpu_model: str | None
    mig_profile: str | None
    min_memory_gib: float | None
    path: str

    @property
    def memory_mib(self) -> int:
        return int(round(self.memory_gib * MIB_PER_GIB))


@dataclass(frozen=True)
class Policy:
    cluster_name: str
    distribution: str
    cohort: str
    mig_leftover: str
    cpu_memory_quota: str
    allow_disruption: bool
    timezone: str
    replan: str = "stable"        # stable: keep current MIG partitions where possible; optimal: from scratch
    gpu_prices: tuple[tuple[str, float], ...] = ()   # (catalogue key, price of one card), for the advisor
    path: str = "gpushare_policy"


@dataclass(frozen=True)
class Inventory:
    teams: tuple[Team, ...]
    nodes: tuple[Node, ...]
    workloads: tuple[Workload, ...]
    policy: Policy

    @property
    def production_team(self) -> Team | None:
        return next((t for t in self.teams if t.production), None)


# What each inventory key takes, for the "allowed" part of a message.
EXPECTED = {
    "name": "a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, "
            "at most 63 characters",
    "team": "the name of a team in gpushare_teams",
    "kind": ", ".join(WORKLOAD_KINDS),
    "gpu_model": "a GPU model of the catalogue, e.g. h200-141gb, h100-80gb, a100-80gb, l40s (all: docs/gpu-models.md)",
    "gpu_count": "1..16",
    "from": 'a quoted time of day "HH:MM" (00:00 to 23:59)',
    "until": 'a quoted time of day "HH:MM" (00:00 to 23:59)',
    "mode": ", ".join(GPU_MODES),
    "index": "0..gpu_count-1",
    "min_memory_gib": "a number of GiB greater than 0",
}
MAX_MEMORY_GIB = 16384      # far above any GPU, and small enough for exact MiB arithmetic

# Every gpushare_* variable the collection reads (inventory, -e, facts it sets), so a misspelt
# one is named (unknown_variables); tests/unit/test_variables.py keeps it in step with the
# roles and docs/roles.md. The awx role takes gpushare_awx_<option> for each of its options
# and checks them itself (its argument spec).
VARIABLES = (
    "gpushare_teams", "gpushare_workloads", "gpushare_policy", "gpushare_node",
    "gpushare_artifacts_dir", "gpushare_plan_dir", "gpushare_window", "gpushare_window_at", "gpushare_render_only",
    "gpushare_gpu_operator_namespace", "gpushare_plan", "gpushare_kubeconfig", "gpushare_distribution",
    "gpushare_gpus_detected", "gpushare_debian_mirror",
    "gpushare_advise_days", "gpushare_advise_dir", "gpushare_advise_end", "gpushare_advise_match",
    "gpushare_advise_min_days", "gpushare_advise_calibration", "gpushare_multikueue",
    "gpushare_prometheus_url", "gpushare_prometheus_bearer_token", "gpushare_prometheus_ca_path",
    "gpushare_prometheus_client_cert", "gpushare_prometheus_client_key", "gpushare_prometheus_password",
    "gpushare_prometheus_username", "gpushare_prometheus_validate_certs",
)
VARIABLE_PREFIXES = ("gpushare_awx_",)


def _dns_hint(value: str) -> str:
    """A DNS label close to ``value``, as a suggestion."""
    label = re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")[:63].strip("-")
    return "Kubernetes names are DNS labels%s" % (", e.g. %r" % label if label and DNS_LABEL.match(label) else "")


class _Reader:
    """Strict typed access to one mapping, recording problems instead of raising."""

    def __init__(self, problems: Problems, path: str, value: object, allowed_keys: tuple[str, ...],
                 required: tuple[str, ...] = ()):
        self.problems = problems
        self.path = path
        self.ok = isinstance(value, dict)
        self.data = value if self.ok else {}
        if not self.ok:
            problems.add(path, "expected a mapping, got %s" % _kind(value), value, "keys " + ", ".join(allowed_keys),
                         "Write it as 'key: value' lines (see inventory-examples/)")
            return
        for key in self.data:
            if key not in allowed_keys:
                close = _close(str(key), allowed_keys)
                problems.add("%s.%s" % (path, key), "unknown key", self.data[key], ", ".join(allowed_keys),
                             "Did you mean %r?" % close if close else "Remove it; keys are case-sensitive")
        for key in required:
            if key not in self.data:
                problems.add("%s.%s" % (path, key), "is required", allowed=EXPECTED.get(key, "a value"),
                             hint="Add '%s:' to this entry (every key is shown, commented, in inventory-examples/)"
                             % key)
            elif self.data[key] is None:
                problems.add("%s.%s" % (path, key), "is required but empty", None, EXPECTED.get(key, "a value"),
                             "Give it a value after the colon")

    def at(self, key: str) -> str:
        return "%s.%s" % (self.path, key)

    def given(self, key: str) -> bool:
        """Whether ``key`` has a value (an empty value, YAML null, is none)."""
        return self.data.get(key) is not None

    def raw(self, key: str, default=None):
        """The value of ``key``; an empty value (YAML null) counts as not given."""
        value = self.data.get(key)
        return default if value is None else value

    def string(self, key: str, default: str | None = None, pattern: re.Pattern | None = None,
               what: str = "") -> str | None:
        value = self.raw(key, default)
        if value is None:
            return None
        if not isinstance(value, str) or value == "":
            self.problems.add(self.at(key), "must be a non-empty string", value, what or "a non-empty string",
                              "Quote it if YAML reads it as another type" if not isinstance(value, str)
                              else "Give a value or remove the key")
            return default
        if pattern and not pattern.match(value):
            self.problems.add(self.at(key), "is not a valid %s" % (what or "value"), value, what or pattern.pattern,
                              _dns_hint(value) if pattern is DNS_LABEL else "")
            return default
        return value

    def clock(self, key: str) -> str | None:
        """A time of day HH:MM. YAML 1.1 reads an unquoted 19:00 as the integer 1140."""
        value = self.data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 24 * 60:
            clock = "%02d:%02d" % divmod(value, 60)
            self.problems.add(self.at(key), "looks like an unquoted time: YAML reads %s as the number %d"
                              % (clock, value), value, EXPECTED[key], "Quote it: %s: \"%s\"" % (key, clock))
            return None
        if isinstance(value, str) and not CLOCK.match(value):
            hint = "Write two digits for the hour and the minutes"
            parts = value.split(":")
            if len(parts) == 2 and all(p.isdigit() for p in parts) and int(parts[0]) < 24 and int(parts[1]) < 60:
                hint = "Write it as \"%02d:%02d\"" % (int(parts[0]), int(parts[1]))
            elif value.startswith("24"):
                hint = "Midnight is \"00:00\""
            self.problems.add(self.at(key), "is not a valid time of day", value, EXPECTED[key], hint)
            return None
        return self.string(key, what=EXPECTED[key])

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str | None:
        value = self.raw(key, default)
        if value is None:
            return None
        if not isinstance(value, str) or value not in choices:
            close = _close(str(value), choices) if isinstance(value, str) else None
            self.problems.add(self.at(key), "is not one of the allowed values", value, ", ".join(choices),
                              "Did you mean %r?" % close if close else "Use one of the allowed values")
            return default
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            hint = "Write true or false"
            if isinstance(value, str):
                hint = "Write it unquoted in YAML (true/false); on the command line use JSON: -e '{\"x\": true}'"
            self.problems.add(self.at(key), "must be a boolean, not %s" % type(value).__name__, value,
                              "true, false", hint)
            return default
        return value

    def integer(self, key: str, default: int | None = None, minimum: int | None = None,
                maximum: int | None = None) -> int | None:
        value = self.raw(key, default)
        if value is None:
            return None
        bounds = "%s..%s" % ("" if minimum is None else minimum, "" if maximum is None else maximum)
        if isinstance(value, bool) or not isinstance(value, int):
            hint = "Write a whole number without quotes"
            if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                hint = "Write it without a decimal point: %d" % value
            self.problems.add(self.at(key), "must be an integer", value, "a whole number " + bounds, hint)
            return default
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            self.problems.add(self.at(key), "is out of range", value, bounds, "Use a value within the range")
            return default
        return value

    def number(self, key: str, default: float | None = None, maximum: float = MAX_MEMORY_GIB) -> float | None:
        """A finite number greater than 0 and at most ``maximum``."""
        value = self.raw(key, default)
        if value is None:
            return None
        allowed = "a number greater than 0 and at most %s" % maximum
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problems.add(self.at(key), "must be a number", value, allowed, "Write a number without quotes")
            return default
        if not math.isfinite(value):
            self.problems.add(self.at(key), "must be a finite number", value, allowed,
                              ".nan and .inf are YAML's not-a-number and infinity; write the amount itself")
            return default
        if not 0 < value <= maximum:
            self.problems.add(self.at(key), "is out of range", value, allowed, "Use a value within the range")
            return default
        return float(value)

    def string_list(self, key: str, default: tuple[str, ...] = (), pattern: re.Pattern | None = None,
                    what: str = "") -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, list):
            self.problems.add(self.at(key), "expected a list of strings, got %s" % _kind(value), value,
                              "a list of %ss" % (what or "string"),
                              "Write it as [a, b] or one '- item' per line")
            return default
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, str) or (pattern and not pattern.match(item)):
                self.problems.add("%s[%d]" % (self.at(key), i), "is not a valid %s" % (what or "string"), item,
                                  EXPECTED["name"] if pattern is DNS_LABEL else "a string",
                                  _dns_hint(item) if isinstance(item, str) and pattern is DNS_LABEL
                                  else "Quote it if YAML reads it as another type")
            else:
                out.append(item)
        return tuple(out)


def _kind(value) -> str:
    """What YAML wrote, in its words: a dict is a mapping, a list a list, None null."""
    if value is None:
        return "null"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), "a %s" % type(value).__name__)


def _close(word: str, options) -> str | None:
    import difflib
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return match[0] if match else None


def _items(problems: Problems, path: str, value, required: bool = True) -> list:
    if value is None:
        if required:
            problems.add(path, "is required", allowed="a list", hint="See inventory-examples/ for its entries")
        return []
    if not isinstance(value, list):
        problems.add(path, "expected a list, got %s" % _kind(value), value, "a list", "Write one '- ' entry per item")
        return []
    return value


def _model(problems: Problems, path: str, name) -> str | None:
    if isinstance(name, int) and not isinstance(name, bool) and gpu_catalog.lookup_pci(name):
        return gpu_catalog.lookup_pci(name).key      # YAML reads an unquoted 0x2335 as a number
    if not isinstance(name, str) or not name:
        problems.add(path, "must name a GPU model", name, EXPECTED["gpu_model"],
                     "Run nvidia-smi -L on the server to see its model")
        return None
    # A name, else a PCI device id ("0x2335"), as the example inventories and docs/gpu-models.md say.
    model = gpu_catalog.lookup(name) or gpu_catalog.lookup_pci(name)
    if model is None:
        guesses = gpu_catalog.suggest(name)
        ambiguous = gpu_catalog.is_ambiguous(name)
        problems.add(path, "names several GPU models" if ambiguous else "unknown GPU model", name,
                     ", ".join(guesses) if ambiguous else ", ".join(sorted(gpu_catalog.CATALOG)),
                     "Did you mean %s?" % " or ".join(repr(g) for g in guesses) if guesses
                     else "Run nvidia-smi -L on the server to see its model")
        return None
    return model.key


def _read_team(problems: Problems, path: str, value) -> Team | None:
    r = _Reader(problems, path, value,
                ("name", "namespaces", "priority", "production", "lend", "borrow",
                 "borrowing_limit", "lending_limit", "members", "pod_security"), required=("name",))
    if not r.ok:
        return None
    name = r.string("name", pattern=DNS_LABEL, what="team name (a DNS label)")
    if name is None:
        return None
    production = r.boolean("production", False)
    return Team(
        name=name,
        namespaces=r.string_list("namespaces", (name,), DNS_LABEL, "namespace name") or (name,),
        priority=r.integer("priority", 1000 if production else 100, minimum=0, maximum=1_000_000),
        production=production,
        lend=r.boolean("lend", True),
        borrow=r.boolean("borrow", not production),
        borrowing_limit=r.integer("borrowing_limit", None, minimum=0, maximum=100_000),
        lending_limit=r.integer("lending_limit", None, minimum=0, maximum=100_000),
        members=_members(problems, r),
        path=path,
        pod_security=_pod_security(r),
    )


def _pod_security(r: _Reader) -> str:
    if r.raw("pod_security") == "privileged":
        r.problems.add(r.at("pod_security"), "would let the team's members run privileged pods (root on a GPU server)",
                       "privileged", ", ".join(POD_SECURITY_LEVELS),
                       "Use baseline for images that must start as root; run privileged pods in a namespace no team owns")
        return POD_SECURITY_LEVELS[0]
    return r.choice("pod_security", POD_SECURITY_LEVELS, POD_SECURITY_LEVELS[0])


def _members(problems: Problems, r) -> tuple[str, ...]:
    """The team's groups, bound to its namespaces' edit role. Kubernetes' own groups
    (system:authenticated, system:serviceaccounts, system:masters, ...) are refused: binding one
    would give every user, every service account or the cluster's components the team's
    namespaces and GPUs."""
    members = r.string_list("members", ())
    raw = r.data.get("members")
    for i, member in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(member, str) and member.startswith("system:"):
            problems.add("%s[%d]" % (r.at("members"), i), "is a Kubernetes system group, not a team's group", member,
                         "a group of your identity provider (e.g. ml-engineers)",
                         "system: groups are every user, every service account or the cluster's own components; "
                         "binding one would give them the team's namespaces and GPUs")
    return tuple(m for m in members if not m.startswith("system:"))


def _clock_text(clock: str) -> str:
    """A clock of a range as HH:MM when it is one ("9:00" -> "09:00"), else as written."""
    hours, minutes = clock.split(":")
    return "%02d:%s" % (int(hours), minutes) if CLOCK.match("%02d:%s" % (int(hours), minutes)) else clock


def _window_ranges(problems: Problems, path: str, value):
    """A window whose hours are written as one range (``hours: "20:00-06:00"`` or ``from:
    "20:00-06:00"``): one problem that gives the window's format, the same mistake under
    several GPUs named once; the window read on with the range's from and until, so that
    its other keys are still checked and the range is not reported again as missing keys."""
    if not isinstance(value, dict):
        return value, False
    ranges = {k: m for k, v in value.items() if isinstance(v, str) and (m := CLOCK_RANGE.match(v))}
    if not ranges:
        return value, False
    value = dict(value)
    for key, match in ranges.items():
        start, end = (_clock_text(c) for c in match.groups())
        problems.add_once(("window range", key, value[key]), "%s.%s" % (path, key),
                          "is a range of hours; a window gives its start and its end as from and until",
                          value[key], WINDOW_FORMAT, "Write from: \"%s\" and until: \"%s\" instead" % (start, end))
        del value[key]
        value.setdefault("from", start)
        value.setdefault("until", end)
    return value, True


def _read_window(problems: Problems, path: str, value, gpu_mode: str, gpu_team, gpu_replicas) -> SharingWindow | None:
    value, ranged = _window_ranges(problems, path, value)
    r = _Reader(problems, path, value, ("name", "from", "until", "mode", "team", "replicas"),
                required=("from", "until", "mode"))
    if not r.ok:
        return None
    start = r.clock("from")
    end = r.clock("until")
    mode = r.choice("mode", WINDOW_MODES)
    if start and end and start == end:
        problems.add(r.at("until"), "must differ from 'from'", end, "another time than %s" % start,
                     "A window of no minutes changes nothing; remove it or give its end")
    replicas = r.integer("replicas", None, minimum=2, maximum=64)
    if mode and mode == gpu_mode:
        # The same mode for another team (a whole GPU lent to training at night) or with other
        # replicas is a change; a MIG GPU's slices belong to its services' teams, so not for MIG.
        changes = r.raw("team") not in (None, gpu_team) or (shares_device(mode) and replicas not in (None, gpu_replicas))
        if mode == MIG:
            problems.add(r.at("mode"), "is the GPU's own mode; a window cannot hand a MIG GPU to another team", mode,
                         "a mode other than %r" % gpu_mode, "Its slices belong to the teams of the services on "
                         "them: remove the window, or give it another mode")
        elif not changes:
            problems.add(r.at("mode"), "is the GPU's own mode and the window names no other team or replicas, so it "
                         "changes nothing", mode, "a mode other than %r, or the same mode with another team"
                         % gpu_mode, "Remove the window, change its mode, or give the team that gets the GPU "
                         "inside it (team: <name>)")
    if shares_device(mode) and not r.given("replicas"):
        problems.add(r.at("replicas"), "is required when the window's mode is %s" % mode, allowed="2..64",
                     hint="How many pods share the card inside the window")
    name = r.raw("name")
    if name in (AUTO, "none"):
        problems.add(r.at("name"), "is a reserved word of the plan module's window option", name,
                     "another window name", "Call it e.g. 'night'")
        return None
    if ranged or None in (start, end, mode):
        return None
    return SharingWindow(name=r.string("name", "window-%s" % start.replace(":", ""), DNS_LABEL,
                                       "window name (a DNS label)"),
                         start=start, end=end, mode=mode, team=r.string("team", what=EXPECTED["team"]),
                         replicas=replicas, path=path)


def _read_gpu(problems: Problems, path: str, value, node_model: str | None, gpu_count: int) -> GpuSpec | None:
    r = _Reader(problems, path, value,
                ("index", "model", "mode", "team", "replicas", "mig_layout", "schedule"), required=("index",))
    if not r.ok:
        return None
    index = r.integer("index", minimum=0, maximum=max(gpu_count - 1, 0))
    if r.given("model"):
        # One model per server: the GPU Operator labels a node with one product, and the
        # planners cut and advertise its GPUs as that model.
        model = _model(problems, r.at("model"), r.raw("model"))
        if model and node_model and model != node_model:
            problems.add(r.at("model"), "differs from the server's gpu_model %s" % node_model, r.raw("model"),
                         node_model, "A server's GPUs are planned as one model: remove 'model' here, or describe "
                         "GPUs of another model under their own server")
    mode = r.choice("mode", GPU_MODES, AUTO)
    replicas = r.integer("replicas", None, minimum=2, maximum=64)
    if shares_device(mode) and not r.given("replicas"):
        problems.add(r.at("replicas"), "is required for mode %s (how many pods share the card)" % mode,
                     allowed="2..64", hint="Add replicas: N, the most pods that take turns on the card")
    if not shares_device(mode) and r.given("replicas"):
        problems.add(r.at("replicas"), "only applies to mode timeslice or mps", r.raw("replicas"),
                     "no replicas for mode %s" % mode, "Remove replicas or set mode: timeslice")
    layout = None
    card = gpu_catalog.CATALOG.get(node_model) if node_model else None
    if r.given("mig_layout") and card is not None and not card.mig_capable:
        problems.add(r.at("mig_layout"), "%s has no MIG, so it cannot be cut into slices" % card.key,
                     r.raw("mig_layout"), "no mig_layout on %s" % card.key,
                     "Remove mig_layout: on this model a GPU is %s" % modes_without_mig())
    elif r.given("mig_layout"):
        layout = _read_layout(problems, r.at("mig_layout"), r.raw("mig_layout"), node_model)
        if mode != MIG:
            problems.add(r.at("mig_layout"), "only applies to mode mig", r.raw("mig_layout"),
                         "no mig_layout for mode %s" % mode, "Set mode: mig")
    windows = tuple(w for i, item in enumerate(_items(problems, r.at("schedule"), r.raw("schedule"), False))
                    if (w := _read_window(problems, "%s.schedule[%d]" % (path, i), item, mode, r.raw("team"), replicas)))
    if index is None or node_model is None:
        return None
    return GpuSpec(index=index, model=node_model, mode=mode, team=r.string("team", what=EXPECTED["team"]),
                   replicas=replicas, mig_layout=layout, windows=windows, path=path)


def _read_layout(problems: Problems, path: str, value, model: str | None):
    if not isinstance(value, dict) or not value:
        problems.add(path, "must map MIG profile names to counts", value, "e.g. {\"3g.71gb\": 1, \"1g.18gb\": 2}",
                     "Or remove mig_layout and let the planner choose")
        return None
    out = []
    card = gpu_catalog.CATALOG.get(model) if model else None
    names = [p.name for p in card.mig_profiles] if card is not None and card.mig_capable else None
    for name, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            problems.add("%s.%s" % (path, name), "must be a positive integer count", count, "1..7",
                         "How many slices of this profile the GPU is cut into")
            continue
        if names is not None and name not in names:
            problems.add("%s.%s" % (path, name), "is not a MIG profile of %s" % card.key, name, ", ".join(names),
                         "Profile names differ between GPU models; see nvidia-smi mig -lgip on the server")
            continue
        out.append((str(name), count))
    layout = tuple(sorted(out))
    if names is not None and len(out) == len(value) and mig_geometry.place(card, dict(layout)) is None:
        problems.add(path, "has no valid placement on %s" % card.key, dict(layout),
                     "profiles that fit one card together (nvidia-smi mig -lgipp lists the placements)",
                     "Remove a slice, or remove mig_layout and let the planner choose")
    return layout


def node_name(host: str) -> str:
    """The Kubernetes node name of an inventory host: lower case, without the domain.

    Args:
        host: an inventory host name, e.g. ``GPU01.example.com``.

    Returns:
        The node name, e.g. ``gpu01``, a string.
    """
    return host.lower().split(".")[0]


def _read_node(problems: Problems, host: str, value) -> Node | None:
    path = "hostvars[%s].gpushare_node" % host
    if value is None:
        problems.add(path, "is missing", None, "a mapping with gpu_model and gpu_count",
                     "Host %s is in the group gpushare_gpu_nodes; describe its GPUs in host_vars/%s.yml "
                     "(gpushare_node: {gpu_model: ..., gpu_count: ...}) or take it out of the group" % (host, host))
        return None
    r = _Reader(problems, path, value,
                ("gpu_model", "gpu_count", "gpus", "cpus", "memory_gib", "host_driver", "dra"),
                required=("gpu_model", "gpu_count"))
    if not r.ok:
        return None
    if not DNS_LABEL.match(node_name(host)):
        problems.add(path, "host name must start with a DNS label to become a Kubernetes node name", host,
                     EXPECTED["name"], _dns_hint(node_name(host)))
    model = _model(problems, r.at("gpu_model"), r.raw("gpu_model"))
    count = r.integer("gpu_count", minimum=1, maximum=16)
    if count is None or model is None:
        return None
    specs = {}
    items = _items(problems, r.at("gpus"), r.raw("gpus"), False)
    if len(items) > count:
        # More entries than GPUs: gpu_count is what is wrong, not each extra entry's index.
        problems.add(r.at("gpu_count"), "is %d but gpus lists %d GPUs" % (count, len(items)), count,
                     "at least %d: one gpus entry per GPU, index 0..gpu_count-1" % len(items),
                     "Set gpu_count: %d if the server has %d GPUs (nvidia-smi -L lists them), or remove the extra "
                     "gpus entries" % (len(items), len(items)))
    for i, item in enumerate(items):
        spec = _read_gpu(problems, "%s.gpus[%d]" % (path, i), item, model, max(count, len(items)))
        if spec is None:
            continue
        if spec.index in specs:
            problems.add("%s.gpus[%d].index" % (path, i), "GPU index listed twice", spec.index,
                         "each index 0..%d once" % (count - 1), "Merge the two entries")
            continue
        specs[spec.index] = spec
    gpus = tuple(specs.get(i) or GpuSpec(index=i, model=model, mode=AUTO, team=None, replicas=None,
                                         mig_layout=None, windows=(), path="%s.gpus (index %d, default auto)" % (path, i))
                 for i in range(count))
    return Node(name=node_name(host), model=model, gpus=gpus,
                cpus=r.integer("cpus", None, minimum=1, maximum=100_000),
                memory_gib=r.integer("memory_gib", None, minimum=1, maximum=1_000_000),
                host_driver=r.boolean("host_driver", False), dra=r.boolean("dra", False), path=path)


def _read_workload(problems: Problems, path: str, value) -> Workload | None:
    r = _Reader(problems, path, value,
                ("name", "team", "kind", "sharing", "isolation", "memory_gib", "replicas", "gpus",
                 "gpu_model", "mig_profile", "device_request"),
                required=("name", "team", "kind"))
    if not r.ok:
        return None
    name = r.string("name", pattern=DNS_LABEL, what="workload name (a DNS label)")
    team = r.string("team", what=EXPECTED["team"])
    kind = r.choice("kind", WORKLOAD_KINDS)
    isolation = r.choice("isolation", tuple(ISOLATION_TO_SHARING))
    sharing = r.choice("sharing", WORKLOAD_SHARING)
    min_memory = None
    if r.given("device_request"):
        d = _Reader(problems, r.at("device_request"), r.raw("device_request"), ("min_memory_gib",),
                    required=("min_memory_gib",))
        min_memory = d.number("min_memory_gib")
        if sharing not in (None, DRA):
            problems.add(r.at("sharing"), "a device_request is served by the DRA driver", sharing, DRA,
                         "Remove sharing or the device_request")
        elif isolation and ISOLATION_TO_SHARING[isolation] != WHOLE:
            # The DRA driver gives the claim a whole device: neither a MIG slice nor a shared card.
            problems.add(r.at("isolation"), "contradicts the device_request, which gets a whole device", isolation,
                         "full, or no isolation", "Remove isolation or the device_request")
        sharing = DRA
    if sharing is None:
        sharing = ISOLATION_TO_SHARING.get(isolation) or {"notebook": ISOLATION_TO_SHARING["none"]}.get(kind, WHOLE)
    elif isolation and MODES[sharing].isolation not in (None, isolation):
        problems.add(r.at("isolation"), "contradicts sharing %s" % sharing, isolation,
                     isolation_choices(), "Keep one of isolation and sharing")
    memory = r.number("memory_gib", None)
    if MODES[sharing].needs_mig and memory is None and not r.given("mig_profile") and not r.given("memory_gib"):
        problems.add(r.at("memory_gib"), "is required for a MIG workload (the slice must hold the model)",
                     allowed="GiB, a number greater than 0",
                     hint="Give the memory one replica needs, or pin a profile with mig_profile")
    gpu_model = _model(problems, r.at("gpu_model"), r.raw("gpu_model")) if r.given("gpu_model") else None
    mig_profile = r.string("mig_profile", what="a MIG profile name such as 3g.71gb")
    if mig_profile and not MODES[sharing].needs_mig:
        problems.add(r.at("mig_profile"), "only applies to sharing mig", mig_profile, "no mig_profile for sharing %s"
                     % sharing, "Set sharing: mig or remove mig_profile")
    gpus = r.integer("gpus", 1, minimum=1, maximum=64)
    if not MODES[sharing].gpus_per_replica and gpus != 1:
        problems.add(r.at("gpus"), "more than one GPU per replica needs whole GPUs", gpus, "1",
                     "Set sharing: whole, or split the workload")
    replicas = r.integer("replicas", 1, minimum=1, maximum=100_000)
    if None in (name, team, kind):
        return None
    return Workload(name=name, team=team, kind=kind, sharing=sharing, memory_gib=memory or 0.0,
                    replicas=replicas or 1, gpus=gpus or 1,
                    gpu_model=gpu_model, mig_profile=mig_profile, min_memory_gib=min_memory, path=path)


def _read_policy(problems: Problems, value) -> Policy:
    r = _Reader(problems, "gpushare_policy", {} if value is None else value,
                ("cluster_name", "kubernetes_distribution", "cohort", "mig_leftover", "cpu_memory_quota",
                 "allow_disruption", "timezone", "gpu_prices", "replan"))
    timezone = r.string("timezone", "UTC", what="an IANA time zone name such as Europe/Berlin or UTC")
    if timezone and not _known_timezone(timezone):
        problems.add(r.at("timezone"), "unknown time zone", timezone,
                     "an IANA time zone name such as Europe/Berlin or UTC", _zone_hint(timezone))
        timezone = None
    return Policy(
        cluster_name=r.string("cluster_name", "gpushare", DNS_LABEL, "cluster name (a DNS label)"),
        distribution=r.choice("kubernetes_distribution", DISTRIBUTIONS, distributions.DEFAULT),
        cohort=r.string("cohort", "gpushare", DNS_LABEL, "cohort name (a DNS label)"),
        mig_leftover=r.choice("mig_leftover", MIG_LEFTOVER, "carve"),
        cpu_memory_quota=r.choice("cpu_memory_quota", CPU_MEMORY_QUOTA, "ignore"),
        allow_disruption=r.boolean("allow_disruption", False),
        timezone=timezone or "UTC",
        replan=r.choice("replan", REPLAN, "stable"),
        gpu_prices=_read_prices(problems, r.at("gpu_prices"), r.raw("gpu_prices")),
    )


MAX_PRICE = 1e12


def _read_prices(problems: Problems, path: str, value) -> tuple[tuple[str, float], ...]:
    """gpushare_policy.gpu_prices: catalogue model -> price of one card (any currency), used
    by the usage advisor to cost the GPUs it proposes to buy."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        problems.add(path, "must map GPU models to the price of one card", value, "e.g. {h200: 32000, l40s: 9000}",
                     "Write one 'model: price' line per GPU model")
        return ()
    out = {}
    for name, price in value.items():
        key = _model(problems, "%s.%s" % (path, name), name)
        if isinstance(price, bool) or not isinstance(price, (int, float)) or not math.isfinite(price) \
                or not 0 < price <= MAX_PRICE:
            problems.add("%s.%s" % (path, name), "must be a price greater than 0", price,
                         "a number greater than 0 and at most %g" % MAX_PRICE, "Write the price of one card, unquoted")
            continue
        if key:
            out[key] = float(price)
    return tuple(sorted(out.items()))


def time_zone(name: str) -> datetime.tzinfo:
    """The zone of gpushare_policy.timezone (UTC needs no tz database)."""
    return datetime.timezone.utc if name == "UTC" else zoneinfo.ZoneInfo(name)


def _known_timezone(name: str) -> bool:
    # A region ("America") is a directory of the tz database and a very long name is
    # refused by the file system: both are OSErrors, not ZoneInfoNotFoundError.
    try:
        time_zone(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def _zone_hint(name: str) -> str:
    zones = sorted(zoneinfo.available_timezones())
    inside = [z for z in zones if z.lower().startswith(name.lower().rstrip("/") + "/")]
    if inside:
        return "%s is a region; name a zone in it, e.g. %s" % (name, ", ".join(inside[:3]))
    close = _close(name, zones)
    return "Did you mean %r?" % close if close else "Sharing windows' from/until are read in this zone"


def read_teams(problems: Problems, value, path: str = "gpushare_teams") -> list[Team]:
    """The teams of ``gpushare_teams`` (``value``); problems recorded, bad entries left out."""
    return [t for i, item in enumerate(_items(problems, path, value))
            if (t := _read_team(problems, "%s[%d]" % (path, i), item))]


def load_inventory(variables: dict, defined_variables=(), deferred: Problems | None = None) -> Inventory:
    """Read and cross-check the inventory; raise PlanInvalid with every problem found.

    ``variables`` holds ``gpushare_teams``, ``gpushare_workloads``, ``gpushare_policy`` and
    ``gpushare_nodes`` (host name -> that host's ``gpushare_node``). ``defined_variables``: the
    names of the variables the inventory defines; unknown ``gpushare_*`` ones are reported
    alone, as the errors that follow from a misspelt name would only hide it.

    ``deferred``: where to put the problems of the device rules (check_state, the windows'
    hours) when they are the only ones, instead of raising them: the inventory is whole and
    the planner can go on to find its own problems, to report them all in one run. A shape
    or reference problem (a bad value, an unknown team) is raised with them: planning on a
    partial inventory would only report its consequences.
    """
    unknown = unknown_variables(defined_variables)
    if unknown:
        raise PlanInvalid(unknown)
    problems = Problems()
    teams = read_teams(problems, variables.get("gpushare_teams"))
    nodes_in = variables.get("gpushare_nodes") or {}
    if not isinstance(nodes_in, dict) or not nodes_in:
        problems.add("gpushare_nodes", "no GPU hosts found", nodes_in or None, "at least one GPU host",
                     "Put GPU servers in the inventory group gpushare_gpu_nodes, each with a gpushare_node in host_vars")
        nodes_in = {}
    nodes = [n for host, item in sorted(nodes_in.items(), key=lambda kv: str(kv[0]))
             if (n := _read_node(problems, str(host), item))]
    _check_node_names(problems, nodes)
    workloads = [w for i, item in enumerate(_items(problems, "gpushare_workloads",
                                                   variables.get("gpushare_workloads"), False))
                 if (w := _read_workload(problems, "gpushare_workloads[%d]" % i, item))]
    policy = _read_policy(problems, variables.get("gpushare_policy"))
    rules = _cross_check(problems, teams, nodes, workloads)
    if len(nodes) == len(nodes_in):
        # Only when every server was read: a server whose model is unreadable is reported already.
        _check_workload_models(problems, nodes, workloads)
    if deferred is not None and len(problems.items) == len(rules):
        deferred.extend(rules)
    else:
        problems.raise_if_any()
    return Inventory(teams=tuple(teams), nodes=tuple(nodes), workloads=tuple(workloads), policy=policy)


def _check_workload_models(problems: Problems, nodes: list[Node], workloads: list[Workload]) -> None:
    """A workload pinned to a GPU model no server has can never run, whatever its sharing."""
    fleet = sorted({n.model for n in nodes})
    for w in workloads:
        if w.gpu_model and w.gpu_model not in fleet:
            problems.add(w.path + ".gpu_model", "no server has %s GPUs" % w.gpu_model, w.gpu_model,
                         "the models of the fleet: %s" % ", ".join(fleet),
                         "Pin one of the fleet's models, remove gpu_model, or add a server with %s GPUs" % w.gpu_model)


def unknown_variables(names) -> list:
    """Problems for each ``gpushare_*`` variable name in ``names`` that the collection does
    not read (a misspelt ``gpushare_team`` otherwise shows only as the errors of a missing
    ``gpushare_teams``)."""
    problems = Problems()
    for name in sorted(set(names)):
        if isinstance(name, str) and name.startswith("gpushare_") and name not in VARIABLES \
                and not name.startswith(VARIABLE_PREFIXES):
            close = _close(name, VARIABLES)
            problems.add(name, "unknown variable", allowed="the gpushare_* variables listed in docs/roles.md (Variables)",
                         hint="Did you mean %r?" % close if close else
                         "Remove it or rename it; names are case-sensitive and spelt as in inventory-examples/")
    return problems.items


def _check_node_names(problems: Problems, nodes: list[Node]) -> None:
    first: dict[str, Node] = {}
    for node in nodes:
        seen = first.setdefault(node.name, node)
        if seen is not node:
            problems.add(node.path, "becomes Kubernetes node %s, as %s does" % (node.name, seen.path),
                         node.path[len("hostvars["):-len("].gpushare_node")],
                         "host names that differ before the first dot, ignoring case",
                         "Node names are lower case and drop the domain; list each server once")


def _unknown_team(problems: Problems, path: str, team: str, names: list[str]) -> None:
    if names:
        problems.add(path, "unknown team", team, ", ".join(names),
                     "Did you mean %r?" % _close(team, names) if _close(team, names)
                     else "Add the team to gpushare_teams or use one of its names")
    else:
        problems.add(path, "unknown team: gpushare_teams defines no team", team, "a team of gpushare_teams",
                     "Define the teams first (group_vars/all/teams.yml in inventory-examples/)")


def _cross_check(problems: Problems, teams: list[Team], nodes: list[Node], workloads: list[Workload]) -> list:
    """References between entries and the device rules; returns the problems of the device
    rules of the base state and of the windows' hours, which planning may go past (see
    load_inventory)."""
    names = [t.name for t in teams]
    for i, name in enumerate(names):
        if name in names[:i]:
            problems.add(teams[i].path + ".name", "team listed twice", name, "each team once",
                         "Merge the two entries")
    producers = [t for t in teams if t.production]
    if len(producers) > 1:
        problems.add(producers[1].path + ".production", "only one team can be the production team that reclaims at once",
                     True, "one team with production: true", "Others are %s" % producers[0].name)
    owner = {}
    for t in teams:
        for ns in t.namespaces:
            if ns in owner:
                problems.add(t.path + ".namespaces", "namespace already belongs to team %s" % owner[ns], ns,
                             "each namespace in exactly one team", "Remove it from one of the teams")
            owner[ns] = t.name
        if t.lending_limit is not None and not t.lend:
            problems.add(t.path + ".lending_limit", "is set but lend is false", t.lending_limit,
                         "no lending_limit when lend is false", "Remove lending_limit or set lend: true")
        if t.borrowing_limit is not None and not t.borrow:
            problems.add(t.path + ".borrowing_limit", "is set but borrow is false", t.borrowing_limit,
                         "no borrowing_limit when borrow is false", "Remove borrowing_limit or set borrow: true")

    for node in nodes:
        for gpu in node.gpus:
            if gpu.team is not None and gpu.team not in names:
                _unknown_team(problems, gpu.path + ".team", gpu.team, names)
            for window in gpu.windows:
                if window.team is not None and window.team not in names:
                    _unknown_team(problems, window.path + ".team", window.team, names)
    first = len(problems.items)
    check_state(problems, nodes)
    rules = problems.items[first:]
    dynamic_mig.check(problems, nodes)
    first = len(problems.items)
    _check_windows(problems, nodes)
    rules += problems.items[first:]
    seen = set()
    for w in workloads:
        if w.team not in names:
            _unknown_team(problems, w.path + ".team", w.team, names)
        if w.name in seen:
            problems.add(w.path + ".name", "workload name used twice", w.name, "each name once",
                         "Rename one, or merge them and raise replicas")
        seen.add(w.name)
    return rules


def check_state(problems: Problems, nodes) -> None:
    """The checks every state of the day must pass: the base state here, and each sharing
    window's state (plan._plan_window), where a GPU's path is its window's. Teams are known
    (_cross_check checks every GPU's and window's)."""
    for node in nodes:
        card = gpu_catalog.CATALOG[node.model]
        for gpu in node.gpus:
            if shares_device(gpu.mode) and gpu.team is None:
                problems.add(gpu.path + ".team", "a %s GPU needs an owning team (its replicas are that team's quota)"
                             % gpu.mode, allowed="a team of gpushare_teams", hint="Add team: <name>")
            if gpu.mode in MODES and MODES[gpu.mode].needs_mig and not card.mig_capable:
                problems.add(gpu.path + ".mode", "%s has no MIG" % card.key, gpu.mode, *_modes_beside(node))
        _check_node_sharing(problems, node)


def _modes_beside(node: Node) -> tuple[str, str]:
    """(allowed, hint) for a GPU of a card without MIG: the device plugin time-slices or
    MPS-shares every GPU of such a node, so once one GPU shares, all must share that way."""
    sharing = sorted({g.mode for g in node.gpus if shares_device(g.mode)})
    if len(sharing) == 1:
        return (sharing[0], "%s has no MIG, so %s applies to every GPU of the node: set mode: %s here too, or move the "
                "other GPUs' sharing to another server" % (node.model, sharing[0], sharing[0]))
    return modes_without_mig(), "Use whole cards, or time-slicing or MPS on every GPU of the node (mode: timeslice or mps)"


def clock_minutes(clock: str) -> int:
    """Minutes since midnight of HH:MM."""
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def window_minutes(start: str, end: str) -> list[tuple[int, int]]:
    """The minutes of the day [from, until) covers, as one or two half-open ranges (a window
    such as 19:00-07:00 runs past midnight)."""
    a, b = clock_minutes(start), clock_minutes(end)
    return [(a, b)] if a < b else [(a, 24 * 60), (0, b)]


def _check_windows(problems: Problems, nodes: list[Node]) -> None:
    """The Plan has one state per window name, so a name means the same hours everywhere and
    two different windows are never in force at once."""
    first: dict[str, SharingWindow] = {}
    for w in (w for node in nodes for gpu in node.gpus for w in gpu.windows):
        seen = first.setdefault(w.name, w)
        if seen is not w and (seen.start, seen.end) != (w.start, w.end):
            problems.add(w.path, "window %s is %s-%s at %s; every window of one name has the same hours"
                         % (w.name, seen.start, seen.end, seen.path), "%s-%s" % (w.start, w.end),
                         "%s-%s" % (seen.start, seen.end), "Use the same hours, or give this window another name")
    names = sorted(first)
    for i, name in enumerate(names):
        for other in names[i + 1:]:
            a, b = first[name], first[other]
            if any(s1 < e2 and s2 < e1 for s1, e1 in window_minutes(a.start, a.end)
                   for s2, e2 in window_minutes(b.start, b.end)):
                problems.add(b.path, "window %s (%s-%s) overlaps window %s (%s-%s at %s)"
                             % (other, b.start, b.end, name, a.start, a.end, a.path), other, "windows that do not overlap",
                             "Each window is planned as one state of the cluster; give GPUs that change at the "
                             "same hours one window name")


def _check_node_sharing(problems: Problems, node: Node) -> None:
    """What the NVIDIA device plugin can express on one node: one sharing method and one
    replica count per resource name, applied to every full GPU (k8s-device-plugin README,
    "Shared Access to GPUs")."""
    modes = {g.mode for g in node.gpus} | {w.mode for g in node.gpus for w in g.windows}
    if MPS in modes and (MIG in modes or TIMESLICE in modes):
        other = "MIG" if MIG in modes else "time-slicing"
        problems.add(node.path + ".gpus", "MPS cannot be combined with %s on one node" % other, sorted(modes),
                     "MPS on every GPU of the node, or no MPS",
                     "The device plugin applies one sharing method to a whole node and has no MPS on MIG devices")
    mps = [g for g in node.gpus if g.mode == MPS]
    if mps and len(mps) != len(node.gpus):
        problems.add(node.path + ".gpus", "MPS shares every full GPU of a node; GPUs %s are not mps"
                     % [g.index for g in node.gpus if g.mode != MPS], {g.index: g.mode for g in node.gpus},
                     "mode: mps on all GPUs of the node", "The device plugin's MPS setting covers every full GPU")
    card = gpu_catalog.CATALOG[node.model]
    sliced = [g for g in node.gpus if g.mode == TIMESLICE]
    if sliced and not card.mig_capable and len(sliced) != len(node.gpus):
        problems.add(node.path + ".gpus",
                     "%s has no MIG, so time-slicing applies to every GPU of the node; GPUs %s are not timeslice"
                     % (card.key, [g.index for g in node.gpus if g.mode != TIMESLICE]),
                     {g.index: g.mode for g in node.gpus},
                     "mode: timeslice on all GPUs of the node",
                     "The device plugin ignores per-GPU 'devices' in sharing.timeSlicing")
    for group in (sliced, mps):
        counts = sorted({g.replicas for g in group if g.replicas})
        if len(counts) > 1:
            problems.add(node.path + ".gpus", "GPUs shared on one node must use the same replicas", counts,
                         "one replica count per node", "The device plugin takes one replica count per resource")
    if node.dra and any(shares_device(g.mode) for g in node.gpus):
        problems.add(node.path + ".dra", "a DRA node is served by the DRA driver, not the device plugin's sharing",
                     True, "dra: true with whole or mig GPUs only",
                     "Set dra: false on this server, or keep its GPUs whole or mig (in every window too)")
