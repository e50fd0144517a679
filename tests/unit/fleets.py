# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Realistic fleets for the fuzz tests (test_fuzz_inventories.py, fuzz_report.py).

``fleet(data)`` draws a well-formed inventory of the size a mid-sized platform has (32 GPU
servers, 10 teams, 50 workloads by default): servers of the common models, each GPU whole,
auto, MIG, time-sliced or MPS, some with a daily sharing window (across midnight or inside
one day), teams that lend and borrow with limits, workloads of every kind and sharing, a
policy with either CPU/memory quota choice and a time zone. Every choice is drawn from a
hypothesis ``st.data()`` object, so a failure shrinks and replays. Many fleets are refused
(PlanInvalid) as a person's first draft would be; the rest reach every planner and renderer.
"""

from __future__ import annotations

from hypothesis import strategies as st

MODELS = ["h200-141gb", "h100-80gb", "a100-80gb", "a100-40gb", "l40s", "l4"]
NO_MIG = {"l40s", "l4"}
WINDOWS = [("night", "19:00", "07:00"), ("office", "09:00", "17:00"), ("late", "22:00", "02:00")]
SIZES_GIB = [4, 6, 8, 10, 12, 16, 20, 24, 30, 40]


def _gpus(data, model: str, count: int, teams: list[str], mps: bool, window, whole: bool = False) -> list[dict]:
    """One sharing method per server (what the device plugin can express on a node of this
    model): all whole or auto, all time-sliced, all MPS, or MIG beside whole and time-sliced."""
    choices = ["whole", "timeslice", "mps"] if mps else ["whole", "auto", "timeslice"] + (["mixed"] * (model not in NO_MIG))
    node_mode = "whole" if whole else data.draw(st.sampled_from(choices), label="server mode")
    replicas = data.draw(st.integers(2, 8), label="replicas")
    gpus = []
    for index in range(count):
        mode = node_mode
        if node_mode == "mixed":
            mode = data.draw(st.sampled_from(["mig", "mig", "whole", "auto", "timeslice"]), label="gpu mode")
        gpu: dict = {"index": index, "mode": mode}
        if mode in ("timeslice", "mps"):
            gpu["replicas"] = replicas
        if mode in ("timeslice", "mps") or data.draw(st.booleans(), label="owned"):
            gpu["team"] = data.draw(st.sampled_from(teams), label="owner")
        if window and not mps and node_mode in ("timeslice", "whole") and model not in NO_MIG and data.draw(st.booleans(), label="window"):
            name, start, end = window
            # Time-sliced by day and whole in the window (lent to training), or the other way round.
            entry = {"name": name, "from": start, "until": end, "mode": "whole" if mode == "timeslice" else "timeslice"}
            if entry["mode"] == "timeslice":
                entry.update(replicas=replicas, team=gpu.get("team") or teams[-1])
            gpu["schedule"] = [entry]
        gpus.append(gpu)
    return gpus


def fleet(data, hosts: int = 32, teams: int = 10, workloads: int = 50) -> dict:
    """A realistic inventory (the variables inventories.load_dir returns), drawn from ``data``."""
    names = ["production"] + ["team-%d" % i for i in range(1, teams)]
    team_list = [{"name": "production", "namespaces": ["prod"], "production": True, "priority": 1000, "borrow": False}]
    for i, name in enumerate(names[1:], 1):
        team: dict = {"name": name, "priority": 100 + 10 * i, "lend": data.draw(st.booleans(), label="lend")}
        if data.draw(st.integers(0, 3), label="borrowing limit") == 0:
            team["borrowing_limit"] = data.draw(st.integers(0, 8), label="borrowing_limit")
        team_list.append(team)
    mps = data.draw(st.integers(0, 7), label="MPS fleet") == 0      # MPS only where nothing is cut by MIG
    window = data.draw(st.sampled_from([None] + WINDOWS), label="window")
    nodes = {}
    for h in range(hosts):
        model = data.draw(st.sampled_from(MODELS), label="model")
        count = data.draw(st.sampled_from([4, 8]), label="gpu_count")
        node = {"gpu_model": model, "gpu_count": count, "cpus": 16 * count, "memory_gib": 128 * count,
                "gpus": _gpus(data, model, count, names, mps, window, whole=h < 2)}
        if h >= 2 and model not in NO_MIG and data.draw(st.integers(0, 15), label="dra") == 0:
            node.update(dra=True, gpus=[{"index": i, "mode": "whole"} for i in range(count)])
        nodes["gpu%02d" % h] = node
    # The production team owns whole GPUs for its services.
    for node in list(nodes.values())[:2]:
        node["gpus"][0] = {"index": 0, "mode": "whole", "team": "production"}
    modes = {g["mode"] for n in nodes.values() for g in n["gpus"]}
    dra = any(n.get("dra") for n in nodes.values())
    # A pin names a model with GPUs of the workload's kind (a person pins what they have).
    pins = {sharing: sorted({n["gpu_model"] for n in nodes.values() if not n.get("dra")
                             and any(g["mode"] in modes_of for g in n["gpus"])})
            for sharing, modes_of in (("whole", ("whole", "auto")), ("mig", ("mig", "auto")))}
    sharings = ["whole", "whole"] + [m for m in ("mig", "timeslice", "mps") if m in modes or (m == "mig" and "auto" in modes)]
    loads = []
    for i in range(workloads):
        kind = data.draw(st.sampled_from(["serving", "notebook", "training", "batch"]), label="kind")
        team = "production" if i < 3 else data.draw(st.sampled_from(names[1:]), label="team")
        w: dict = {"name": "%s-%d" % (kind, i), "team": team, "kind": kind}
        sharing = "whole" if i < 3 else data.draw(st.sampled_from(sharings + (["dra"] if dra else [])), label="sharing")
        if sharing == "dra":
            w["device_request"] = {"min_memory_gib": data.draw(st.sampled_from(SIZES_GIB), label="min_memory_gib")}
        else:
            w["sharing"] = sharing
        if sharing in ("whole", "mig"):
            w["memory_gib"] = data.draw(st.sampled_from(SIZES_GIB), label="memory_gib")
        if sharing == "whole" and team != "production":
            w["gpus"] = data.draw(st.sampled_from([1, 1, 2, 4]), label="gpus")
        w["replicas"] = 1 if team == "production" else data.draw(st.integers(1, 3), label="replicas")
        pinnable = [m for m in pins.get(sharing, []) if sharing != "mig" or m not in NO_MIG]
        if pinnable and team != "production" and data.draw(st.integers(0, 4), label="pinned") == 0:
            w["gpu_model"] = data.draw(st.sampled_from(pinnable), label="gpu_model")
        loads.append(w)
    policy = {"cluster_name": "fleet",
              "cpu_memory_quota": data.draw(st.sampled_from(["ignore", "proportional"]), label="cpu_memory_quota"),
              "mig_leftover": data.draw(st.sampled_from(["carve", "leave"]), label="mig_leftover"),
              "timezone": data.draw(st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]), label="timezone")}
    return {"gpushare_teams": team_list, "gpushare_nodes": nodes, "gpushare_workloads": loads, "gpushare_policy": policy}
