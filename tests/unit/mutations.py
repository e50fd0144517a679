# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mutations of the example inventories, for the fuzz tests (test_fuzz_inventories.py).

``mutate(data, variables)`` applies one to three random edits to ``variables`` (an example
inventory as tests/unit/inventories.py loads it) in place, drawing every choice from a
hypothesis ``st.data()`` object so failures shrink and replay, and returns a description of
each edit ("set hostvars[gpu01].gpushare_node.gpus[1].mode = 'mig'") for the failure
report. The edits are what people get wrong in YAML: wrong types, unknown and missing
keys, NaN and huge numbers, long and odd strings, duplicate entries and hosts, clocks and
time zones, plus well-formed but unusual combinations (sharing windows, per-GPU models,
MIG layouts of another card, device requests) that reach the planners behind validation.
"""

from __future__ import annotations

import copy
import math

from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG

# Every problem path must start with one of these (hostvars[HOST] for gpushare_nodes' entries).
PATH_PREFIXES = ("gpushare_teams", "gpushare_workloads", "gpushare_policy", "gpushare_nodes", "hostvars[")

# ------------------------------------------------------------------------ vocabulary

LONG = "x" * 300
MODEL_NAMES = sorted(CATALOG) + ["h200", "NVIDIA H200", "0x2335", 0x2335, "a100", "H100", "l4", "tpu-v5", ""]
PROFILE_NAMES = sorted({p.name for m in CATALOG.values() for p in m.mig_profiles})
CLOCKS = ["19:00", "07:00", "00:00", "23:59", "12:00", "19:30", "24:00", "7:00", "19:60", "19:00:00", " 19:00",
          "1900", "noon", 1140, 420, 0, 19.0, -1]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Chatham", "America", "Europe",
         "Not/AZone", "../etc", "/etc/passwd", "Europe/../UTC", "utc", "Z", "GMT+5", "Etc/GMT+5",
         "z" * 256, "Europe/" + "a" * 300, "\x00", "Europe/Berlin\n"]
MODES = ["auto", "whole", "mig", "timeslice", "mps", "MIG", "Whole", "dra", "none"]
NUMBERS = [0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 64, 65, 100_000, 100_001, -1, -(10 ** 30), 10 ** 30, 2 ** 63,
           0.5, 1e-300, 5e-324, -0.0, math.nan, math.inf, -math.inf, 1.8e308, -1.8e308]
SPECIAL = [None, True, False, "", " ", "yes", "true", "null", "None", "0", "-1", "1e400", "nan", LONG,
           "é" * 260, "日本語", "\u202e", "\x00", "\ufeff", "\u200b", "../etc", "gpu01", "GPU01", "auto", "none",
           [], {}, [None], {"": None}, [[]], {"a": {"b": []}}, ["x"] * 3, {"min_memory_gib": math.inf}]

# Values that make sense for a key (found by the nearest mapping key of the location).
KEY_VALUES = {
    "mode": MODES,
    "gpu_model": MODEL_NAMES,
    "model": MODEL_NAMES,
    "gpu_count": [0, 1, 2, 3, 8, 16, 17, -1],
    "index": [0, 1, 2, 3, 7, 8, 15, 16, -1],
    "replicas": [0, 1, 2, 5, 64, 65, 100_000, 100_001],
    "from": CLOCKS,
    "until": CLOCKS,
    "timezone": ZONES,
    "memory_gib": [0, 1e-9, 6, 40, 80, 141, 1000, math.nan, math.inf, 1.8e308, 10 ** 30, -5],
    "min_memory_gib": [0, 1e-9, 10, 120, 141, 1000, math.nan, math.inf, -math.inf, 1.8e308, 10 ** 30, -5],
    "mig_profile": PROFILE_NAMES + ["7g.999gb", "nvidia.com/mig-1g.10gb"],
    "lending_limit": [0, 1, 2, 5, 100, -1, 10 ** 30],
    "borrowing_limit": [0, 1, 8, -1, 10 ** 30],
    "priority": [0, 1, 1_000_000, 1_000_001, -1],
    "sharing": ["whole", "mig", "timeslice", "mps", "dra", "fractional"],
    "isolation": ["full", "hardware", "none", "soft"],
    "kind": ["serving", "notebook", "training", "batch", "inference"],
    "gpus": [1, 2, 4, 8, 9, 64, 65],
    "cpus": [1, 64, 0, -1, 10 ** 30],
    "kubernetes_distribution": ["kubeadm", "microk8s", "k3s"],
    "mig_leftover": ["carve", "leave"],
    "cpu_memory_quota": ["ignore", "proportional"],
    "name": ["auto", "none", "night", "day", "lab", "production", "a" * 63, "a" * 64, "-x", "Night", "ñ"],
    "team": ["production", "training", "lab", "students", "inference", "research", "nobody"],
}
ALL_KEYS = sorted(set(KEY_VALUES) | {
    "namespaces", "members", "production", "lend", "borrow", "host_driver", "dra", "gpus", "schedule",
    "mig_layout", "device_request", "isolation", "cluster_name", "cohort", "allow_disruption"})


def scalars(tree) -> list:
    """Every scalar in ``tree``: the inventories' own words, reused in other places."""
    if isinstance(tree, dict):
        return [v for value in tree.values() for v in scalars(value)]
    if isinstance(tree, list):
        return [v for value in tree for v in scalars(value)]
    return [tree]


def _json_like(leaves):
    def nested(inner):
        return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    return st.recursive(leaves, nested, max_leaves=6)


# Any value at all: the hand-picked ones first (they shrink to them), then generated ones.
ANY_VALUE = st.one_of(
    st.sampled_from(SPECIAL + NUMBERS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=300),
    _json_like(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)),
)


MIG_MODELS = sorted(m.key for m in CATALOG.values() if m.mig_capable)


def mig_layouts(key: str | None = None):
    """A mig_layout of card ``key``, or of any MIG card (so often another card than the GPU's)."""
    model = st.just(key) if key in MIG_MODELS else st.sampled_from(MIG_MODELS)
    return model.flatmap(lambda key: st.dictionaries(
        st.sampled_from([p.name for p in CATALOG[key].mig_profiles]), st.integers(1, 3) | st.integers(-1, 8),
        min_size=1, max_size=4))


def windows(team_names):
    """A schedule entry: mostly well-formed (so the window planner runs), else any subset of
    the keys with odd clocks and modes (so the 'is required' and clock checks run)."""
    def well_formed(mode):
        entry = {"name": st.sampled_from(["night", "day", "weekend-x"]), "from": st.sampled_from(CLOCKS[:6]),
                 "until": st.sampled_from(CLOCKS[:6]), "mode": st.just(mode)}
        optional = {"team": st.sampled_from(team_names)}
        if mode in ("timeslice", "mps"):
            entry["replicas"] = st.integers(2, 8)
        return st.fixed_dictionaries(entry, optional=optional)
    keys = {"name": st.sampled_from(KEY_VALUES["name"]), "from": st.sampled_from(CLOCKS),
            "until": st.sampled_from(CLOCKS), "mode": st.sampled_from(MODES),
            "team": st.sampled_from(team_names + ["nobody"]), "replicas": st.sampled_from(KEY_VALUES["replicas"])}
    return st.one_of(st.sampled_from(["whole", "mig", "timeslice", "mps"]).flatmap(well_formed),
                     st.fixed_dictionaries({}, optional=keys))


def domain_value(key, ctx: dict):
    """A value that makes sense for ``key`` (right type, edge of its range), or None."""
    if key in KEY_VALUES:
        return st.sampled_from(KEY_VALUES[key])
    if key == "mig_layout":
        return mig_layouts()
    if key == "device_request":
        return st.fixed_dictionaries({"min_memory_gib": st.sampled_from(KEY_VALUES["min_memory_gib"])})
    if key == "schedule":
        return st.lists(windows(ctx["teams"]), min_size=1, max_size=3)
    return None


def value_for(key, ctx: dict):
    """A value for a mapping key: one that makes sense for the key (reaching the planners),
    a word from elsewhere in the inventory, or anything."""
    options = [s for s in [domain_value(key, ctx)] if s is not None]
    options.append(st.sampled_from(ctx["words"]))
    options.append(ANY_VALUE)
    # A fresh copy each time: sampled_from hands out the same list or dict object, which
    # later edits would change (or insert into itself).
    return st.one_of(options).map(copy.deepcopy)


# ------------------------------------------------------------------------ locations

def inventory_path(loc: tuple) -> str:
    """The path problems use for ``loc``: gpushare_nodes' entries are hostvars[HOST].gpushare_node."""
    if len(loc) >= 2 and loc[0] == "gpushare_nodes":
        text, rest = "hostvars[%s].gpushare_node" % loc[1], loc[2:]
    else:
        text, rest = str(loc[0]), loc[1:]
    for part in rest:
        text += "[%d]" % part if isinstance(part, int) else ".%s" % part
    return text


def locations(tree, loc: tuple = ()) -> list[tuple]:
    """Every location below ``tree``: tuples of dict keys and list indices."""
    out = []
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.append(loc + (key,))
            out += locations(value, loc + (key,))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            out.append(loc + (i,))
            out += locations(value, loc + (i,))
    return out


def get(tree, loc: tuple):
    for part in loc:
        tree = tree[part]
    return tree


def nearest_key(loc: tuple):
    """The mapping key a location's value belongs to ('gpus' for gpus[2], 'mode' for .mode)."""
    return next((part for part in reversed(loc) if isinstance(part, str)), None)


def containers(tree, kind) -> list[tuple]:
    return [loc for loc in [()] + locations(tree) if isinstance(get(tree, loc), kind)]


def gpu_locations(variables) -> list[tuple]:
    """(gpushare_nodes, host, gpus, i) of every listed GPU mapping."""
    return [loc for loc in containers(variables, dict)
            if len(loc) == 4 and loc[0] == "gpushare_nodes" and loc[2] == "gpus"]


# ------------------------------------------------------------------------ the edits

class Edit(str):
    """An edit's description, and for a replaced value its inventory path and new value."""

    def __new__(cls, text: str, loc: tuple = (), value: object = None):
        self = super().__new__(cls, text)
        self.loc, self.value = loc, value
        self.path = inventory_path(loc) if loc else None
        return self

    def replaced(self, variables: dict) -> str | None:
        """The path of a value this edit wrote that is still in ``variables`` (a later edit
        may have overwritten or moved it). A null is read like a missing key ("is
        required" need not show it), so it does not count."""
        try:
            present = self.loc and get(variables, self.loc) is self.value
        except (KeyError, IndexError, TypeError):
            present = False
        return self.path if present and self.value is not None else None


def replace(data, variables, ctx) -> str:
    if not locations(variables):
        return "nothing left to replace"
    loc = data.draw(st.sampled_from(locations(variables)), label="location")
    value = data.draw(value_for(nearest_key(loc), ctx), label="value")
    get(variables, loc[:-1])[loc[-1]] = value
    return Edit("set %s = %r" % (inventory_path(loc), value), loc, value)


# Where each key belongs: the kinds of mapping (see mapping_kind) that may hold it.
KEY_HOMES = {
    "mode": ("gpu", "window"), "gpu_model": ("node", "workload"), "model": ("gpu",), "gpu_count": ("node",),
    "index": ("gpu",), "replicas": ("gpu", "window", "workload"), "from": ("window",), "until": ("window",),
    "timezone": ("policy",), "memory_gib": ("workload", "node"), "min_memory_gib": ("device_request",),
    "mig_profile": ("workload",), "lending_limit": ("team",), "borrowing_limit": ("team",),
    "priority": ("team",), "sharing": ("workload",), "isolation": ("workload",), "kind": ("workload",),
    "gpus": ("workload",), "cpus": ("node",), "kubernetes_distribution": ("policy",), "mig_leftover": ("policy",),
    "cpu_memory_quota": ("policy",), "name": ("team", "workload", "window"), "team": ("gpu", "window", "workload"),
    "mig_layout": ("gpu",), "device_request": ("workload",), "schedule": ("gpu",),
}


MAPPING_SHAPES = {  # str entries are literal keys; int and str (the types) match any index or host
    ("gpushare_policy",): "policy", ("gpushare_teams", int): "team", ("gpushare_workloads", int): "workload",
    ("gpushare_workloads", int, "device_request"): "device_request", ("gpushare_nodes", str): "node",
    ("gpushare_nodes", str, "gpus", int): "gpu", ("gpushare_nodes", str, "gpus", int, "schedule", int): "window",
}


def mapping_kind(loc: tuple) -> str | None:
    """What the mapping at ``loc`` is in the inventory's layout (a key of KEY_HOMES' values)."""
    for shape, kind in MAPPING_SHAPES.items():
        if len(shape) == len(loc) and all(isinstance(part, want) if isinstance(want, type) else part == want
                                          for want, part in zip(shape, loc)):
            return kind
    return None


def targeted(data, variables, ctx) -> str:
    """A value that makes sense for a key, where the key belongs: choosing the key first
    reaches rare places (the one time zone, a window's clock) as often as common ones, and
    well-typed values get past validation into the planners."""
    key = data.draw(st.sampled_from(sorted(KEY_HOMES)), label="key")
    homes = [loc for loc in containers(variables, dict) if mapping_kind(loc) in KEY_HOMES[key]]
    if not homes:
        return "no place for %s" % key
    loc = data.draw(st.sampled_from(homes), label="mapping") + (key,)
    if data.draw(st.integers(0, 4), label="null?") == 0:
        value = None   # `key:` with nothing after the colon: YAML's null, a common slip
    else:
        value = copy.deepcopy(data.draw(domain_value(key, ctx), label="value"))
    get(variables, loc[:-1])[key] = value
    return Edit("set %s = %r" % (inventory_path(loc), value), loc, value)


def delete(data, variables, ctx) -> str:
    if not locations(variables):
        return "nothing left to delete"
    loc = data.draw(st.sampled_from(locations(variables)), label="location")
    del get(variables, loc[:-1])[loc[-1]]
    return "delete %s" % inventory_path(loc)


def add_key(data, variables, ctx) -> str:
    """A known key where it may or may not belong (model on a GPU, schedule on a team), or an unknown one."""
    loc = data.draw(st.sampled_from(containers(variables, dict)), label="mapping")
    key = data.draw(st.sampled_from(ALL_KEYS) | st.text(max_size=300), label="key")
    value = data.draw(value_for(key, ctx), label="value")
    get(variables, loc)[key] = value
    return "set %s = %r" % (inventory_path(loc + (key,)) if loc else key, value)


def duplicate(data, variables, ctx) -> str:
    """A list entry twice, or a host twice under a name that differs in case or domain."""
    if data.draw(st.booleans(), label="host?"):
        hosts = variables.get("gpushare_nodes")
        if not isinstance(hosts, dict) or not hosts:
            return "no hosts to duplicate"
        host = data.draw(st.sampled_from(sorted(hosts, key=str)), label="host")
        name = data.draw(st.sampled_from([str(host).upper(), str(host).capitalize(), "%s.example.com" % host,
                                          "%s.EXAMPLE.com" % str(host).upper(), str(host) + " ", "-" + str(host),
                                          "é" + str(host), str(host) * 30, ""]), label="new name")
        hosts[name] = copy.deepcopy(hosts[host])
        return "copy host %r as %r" % (host, name)
    lists = containers(variables, list)
    if not lists:
        return "no list to duplicate in"
    loc = data.draw(st.sampled_from(lists), label="list")
    items = get(variables, loc)
    if not items:
        return "empty list %s" % inventory_path(loc)
    i = data.draw(st.integers(0, len(items) - 1), label="entry")
    items.append(copy.deepcopy(items[i]))
    return "append a copy of %s[%d]" % (inventory_path(loc), i)


def add_window(data, variables, ctx) -> str:
    """A sharing window on a listed GPU (the windows planner runs only on valid ones)."""
    gpus = gpu_locations(variables)
    if not gpus:
        return "no GPU to add a window to"
    loc = data.draw(st.sampled_from(gpus), label="gpu")
    window = data.draw(windows(ctx["teams"]), label="window")
    gpu = get(variables, loc)
    if isinstance(gpu.get("schedule"), list):
        gpu["schedule"].append(window)
    else:
        gpu["schedule"] = [window]
    return "add to %s.schedule %r" % (inventory_path(loc), window)


def add_gpu(data, variables, ctx) -> str:
    """A GPU entry with a per-GPU model, a MIG layout, sharing or a window: mostly well-formed."""
    nodes = [loc for loc in containers(variables, dict) if len(loc) == 2 and loc[0] == "gpushare_nodes"]
    if not nodes:
        return "no node to add a GPU to"
    teams = ctx["teams"]

    def unlisted(loc):
        node = get(variables, loc)
        gpus = node.get("gpus") if isinstance(node.get("gpus"), list) else []
        listed = {g.get("index") for g in gpus if isinstance(g, dict) and isinstance(g.get("index"), int)}
        count = node.get("gpu_count") if isinstance(node.get("gpu_count"), int) else 0
        return [i for i in range(min(count, 16)) if i not in listed]   # min: gpu_count may be 10**30

    # A node with an unlisted GPU index when there is one, so the entry is not a duplicate.
    loc = data.draw(st.sampled_from([n for n in nodes if unlisted(n)] or nodes), label="node")
    node, free = get(variables, loc), unlisted(loc)
    # Well-formed, so it gets past validation to the planners; the other edits break it.
    gpu = {"index": data.draw(st.sampled_from(free) if free else st.integers(0, 8), label="index"),
           "mode": data.draw(st.sampled_from(["mig", "mig", "whole", "timeslice", "mps", "auto"]), label="mode")}
    if data.draw(st.booleans(), label="team?"):
        gpu["team"] = data.draw(st.sampled_from(teams), label="team")
    if gpu["mode"] in ("timeslice", "mps"):
        gpu["replicas"] = data.draw(st.integers(2, 8), label="replicas")
    if data.draw(st.booleans(), label="model?"):
        gpu["model"] = data.draw(st.sampled_from(MIG_MODELS + MODEL_NAMES), label="model")
    if gpu["mode"] == "mig" and data.draw(st.booleans(), label="mig_layout?"):
        # Of the GPU's own model when it names one: a layout that fits the GPU's model but
        # not the server's is what gets past the per-profile check.
        gpu["mig_layout"] = data.draw(mig_layouts(gpu.get("model")), label="mig_layout")
    if data.draw(st.integers(0, 3), label="schedule?") == 0:
        gpu["schedule"] = data.draw(st.lists(windows(teams), min_size=1, max_size=2), label="schedule")
    if isinstance(node.get("gpus"), list):
        node["gpus"].append(gpu)
    else:
        node["gpus"] = [gpu]
    return "add to %s.gpus %r" % (inventory_path(loc), gpu)


def add_workload(data, variables, ctx) -> str:
    """A workload asking for MIG, sharing, whole GPUs or a DRA device, of a known team."""
    teams = ctx["teams"]
    workload = data.draw(st.fixed_dictionaries(
        {"name": st.sampled_from(["fuzz-a", "fuzz-b"]), "team": st.sampled_from(teams),
         "kind": st.sampled_from(["serving", "notebook", "training", "batch"])},
        optional={"sharing": st.sampled_from(KEY_VALUES["sharing"][:5]),
                  "isolation": st.sampled_from(KEY_VALUES["isolation"][:3]),
                  "memory_gib": st.sampled_from(KEY_VALUES["memory_gib"]),
                  "replicas": st.integers(1, 20), "gpus": st.integers(1, 9),
                  "gpu_model": st.sampled_from(MODEL_NAMES), "mig_profile": st.sampled_from(PROFILE_NAMES),
                  "device_request": st.fixed_dictionaries(
                      {"min_memory_gib": st.sampled_from(KEY_VALUES["min_memory_gib"])})}), label="workload")
    if not isinstance(variables.get("gpushare_workloads"), list):
        variables["gpushare_workloads"] = []
    variables["gpushare_workloads"].append(workload)
    return "add to gpushare_workloads %r" % (workload,)


# Drawn uniformly: the list's repeats are the weights.
EDITS = [replace, replace, targeted, targeted, targeted, delete, add_key, duplicate, add_window, add_gpu,
         add_workload]


def context(variables: dict) -> dict:
    """What the edits reuse from the unmutated inventory: its scalars (once each, in file
    order, so a run replays) and its team names (so windows and workloads pass validation)."""
    words = list({repr(w): w for w in scalars(variables)}.values()) or [None]
    teams = [t["name"] for t in variables.get("gpushare_teams") or [] if isinstance(t, dict) and "name" in t]
    return {"words": words, "teams": [str(t) for t in teams] or ["nobody"]}


def mutate(data, variables: dict, max_edits: int = 3) -> list[str]:
    """Apply 1..max_edits edits to ``variables`` in place; return what was done (a list of
    Edit or plain str descriptions)."""
    ctx = context(variables)
    done = []
    for _edit in range(data.draw(st.integers(1, max_edits), label="edits")):
        edit = data.draw(st.sampled_from(EDITS), label="edit")
        done.append(edit(data, variables, ctx))
    return done


def replaced_paths(edits: list, variables: dict) -> tuple[str, ...]:
    """Inventory paths holding a value an edit wrote (see Edit.replaced)."""
    return tuple(p for e in edits if isinstance(e, Edit) and (p := e.replaced(variables)))
