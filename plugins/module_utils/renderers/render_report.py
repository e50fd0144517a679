# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to what a person reads: the split table printed by plan.yml and report.md."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import (
    DRA, MIG, MIG_DYNAMIC, MODES, MPS, TIMESLICE, WHOLE)
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import (
    RECUT_STEPS, by_team, dynamic_lines, has_changes, recorded_against, restart_line)
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_dynamic_mig
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.day_states import day_states, switch_text, switches


def _mig_line(gpu: dict) -> str:
    parts = []
    for s in gpu["mig"]["slices"]:
        who = s["workload"] or ("spare (%s)" % s["team"] if s["team"] else "spare (cohort)")
        parts.append("%s@%d %s" % (s["profile"], s["start"], who))
    return "MIG: " + ", ".join(parts) if parts else "MIG: unpartitioned"


def _shared_line(gpu: dict) -> str:
    how = " as one %s instance" % next(iter(gpu["mig"]["profiles"])) if gpu.get("mig") else ""
    each = gpu.get("per_client")
    limits = " (each pod: %d %% of the compute, %d MiB)" % (each["compute_percent"], each["memory_mib"]) if each else ""
    return "%s x%d%s -> %s%s" % (MODES[gpu["mode"]].words, gpu["replicas"], how, gpu["resource"], limits)


def _whole_line(gpu: dict) -> str:
    return "whole -> %s" % gpu["resource"]


def _dynamic_line(gpu: dict) -> str:
    return "dynamic MIG: slices made per claim -> %s" % gpu["resource"]


# A Plan GPU's mode -> its line in the split table (every GPU mode of sharing_modes.MODES).
GPU_LINES = {WHOLE: _whole_line, MIG: _mig_line, TIMESLICE: _shared_line, MPS: _shared_line, MIG_DYNAMIC: _dynamic_line}


def gpu_line(gpu: dict) -> str:
    return GPU_LINES[gpu["mode"]](gpu)


def split_table(plan: dict) -> list[str]:
    """Short fixed-width lines: one per GPU, then one per team."""
    lines = ["%-10s %-4s %-13s %s" % ("server", "gpu", "team", "sharing")]
    for node in plan["nodes"]:
        for gpu in node["gpus"]:
            lines.append("%-10s %-4d %-13s %s" % (node["name"], gpu["index"], gpu["team"] or "(cohort)", gpu_line(gpu)))
    for window in plan["windows"]:
        for g in window["gpus"]:
            lines.append("%-10s %-4d %-13s window %s %s-%s %s: %s" % (
                g["node"], g["index"], g["team"] or "(cohort)", window["name"], window["from"], window["until"],
                plan["cluster"]["timezone"], MODES[g["mode"]].words))
    lines.append("")
    lines.append("%-13s %-9s %s" % ("team", "priority", "nominal quota (ClusterQueue = team name)"))
    for team in plan["teams"]:
        quota = ", ".join("%d %s" % (n, key.split(" ", 1)[1]) for key, n in team["owns"].items()) or "none (borrows)"
        role = "  [production: reclaims at once]" if team["production"] else ""
        lines.append("%-13s %-9d %s%s" % (team["name"], team["priority"], quota, role))
    return lines


def report_markdown(plan: dict, changes: dict | None = None) -> str:
    """report.md; its first section is the pending changes (changes.md) when there are any."""
    out = ["# GPU sharing plan: %s" % plan["cluster"]["name"], ""]
    if changes and changes["previous"] and has_changes(changes):
        # One heading level down: the changes are a section of the report.
        out += ["#" + line if line.startswith("#") else line for line in changes_markdown(changes).split("\n")]
    out += ["Kubernetes: %s. Kueue cohort: `%s`. Leftover MIG capacity: %s. CPU/memory quota: %s. "
            "Sharing windows' times are in %s (`gpushare_policy.timezone`). GPUs are numbered by their "
            "inventory index, as `nvidia-smi -i` numbers them." % (
                plan["cluster"]["kubernetes_distribution"], plan["cluster"]["cohort"], plan["cluster"]["mig_leftover"],
                plan["cluster"]["cpu_memory_quota"], plan["cluster"]["timezone"]), ""]
    out += ["## Servers and GPUs", "", "| server | GPU | model | team | sharing |", "|---|---|---|---|---|"]
    for node in plan["nodes"]:
        for gpu in node["gpus"]:
            out.append("| %s | %d | %s | %s | %s |" % (node["name"], gpu["index"], node["model"],
                                                       gpu["team"] or "cohort pool", gpu_line(gpu)))
    out += ["", "## What each server advertises", "", "| server | labels | resources |", "|---|---|---|"]
    for node in plan["nodes"]:
        labels = "<br>".join("`%s=%s`" % kv for kv in node["labels"].items())
        resources = "<br>".join("`%s: %d`" % kv for kv in node["advertised"].items()) or "DRA devices"
        out.append("| %s | %s | %s |" % (node["name"], labels, resources))
    out += ["", "## Teams and quotas", "", "| team | namespaces | priority | nominal quota | lends | borrows |",
            "|---|---|---|---|---|---|"]
    for team in plan["teams"]:
        quota = _quota_cell(team["owns"])
        out.append("| %s%s | %s | %d | %s | %s | %s |" % (
            team["name"], " (production)" if team["production"] else "", ", ".join(team["namespaces"]),
            team["priority"], quota, _limit(team["lend"], team["lending_limit"]),
            _limit(team["borrow"], team["borrowing_limit"])))
    out += admission_lines(plan)
    out += ["", "## Workloads", "", "| workload | team | kind | sharing | replicas | placement |", "|---|---|---|---|---|---|"]
    for w in plan["workloads"]:
        if w["sharing"] == MIG:
            where = ", ".join("%s GPU %d %s" % (s["node"], s["gpu"], s["profile"]) for s in w["slices"])
        elif w["sharing"] == DRA or w.get("claim_template"):
            where = "ResourceClaimTemplate `%s`%s" % (w["claim_template"], " (%s)" % w["profile"] if w.get("profile") else "")
        else:
            where = "queued in `%s`" % w["queue"]
        out.append("| %s | %s | %s | %s | %d x %d GPU | %s |" % (
            w["name"], w["team"], w["kind"], w["sharing"], w["replicas"], w["gpus_per_replica"], where))
    out += render_dynamic_mig.report_lines(plan)
    out += _states_of_the_day(plan)
    out += switch_lines(plan)
    if plan["warnings"]:
        out += ["", "## Warnings", ""] + ["- %s" % w for w in plan["warnings"]]
    return "\n".join(out) + "\n"


def _quota_cell(owns: dict) -> str:
    """Each "<flavor> <resource>": quota, as its ClusterQueue has it: a count of devices or CPUs,
    or a Kubernetes quantity ("512Gi" of memory, under cpu_memory_quota: proportional)."""
    return "<br>".join("%s `%s` (%s)" % (n, key.split(" ", 1)[1], key.split(" ", 1)[0]) for key, n in owns.items()) or "none"


def _states_of_the_day(plan: dict) -> list[str]:
    """Each state's hours, what changes in it, its quotas and its whole-GPU workloads."""
    zone = plan["cluster"]["timezone"]
    windows = {w["name"]: w for w in plan["windows"]}
    out = ["", "## The day, state by state (times in %s)" % zone, ""]
    for state in day_states(plan):
        hours = ", ".join("%s to %s %s" % (a, b, zone) for a, b in state["hours"]) or "all day"
        if state["window"] is None:
            out.append("### Base state (%s)" % hours)
            out += ["", "The GPUs and quotas above, %s." % ("outside every window" if plan["windows"] else "all day")]
        else:
            window = windows[state["window"]]
            gpus = ", ".join("%s GPU %d %s (%s)" % (g["node"], g["index"], MODES[g["mode"]].words, g["team"] or "cohort pool")
                             for g in window["gpus"])
            out.append("### Window %s (%s)" % (state["window"], hours))
            out += ["", "%s. Node labels and ClusterQueues switch to the window's (manifests/windows/%s.yaml)."
                    % (gpus, state["window"]), "", "| team | nominal quota in this window |", "|---|---|"]
            out += ["| %s | %s |" % (team, _quota_cell(owns)) for team, owns in state["quotas"].items()]
        placed = ["%s GPU %d: %s%s" % (node, index, ", ".join(use["workloads"]), _borrowed(use["borrower"]))
                  for (node, index), use in state["whole"].items() if use["workloads"]]
        out += ["", "Whole GPUs: %s." % ("; ".join(placed + state["waiting"]) or "none in use")]
        out.append("")
    return out[:-1]


def switch_lines(plan: dict) -> list[str]:
    """What each switch between the states of the day does to running work (day_states.switches)."""
    found = switches(plan)
    if not found:
        return []
    return ["", "## What each switch does to running work", ""] + ["- %s" % switch_text(plan, s) for s in found]


def changes_markdown(changes: dict) -> str:
    """changes.md: what the plan changes against the applied plan, per team, not applied yet."""
    if not (changes["previous"] and has_changes(changes)):
        # The same text for a first plan and for the applied plan again: a rerun writes nothing.
        return ("# Changes not applied yet\n\nNone to list: this is the first plan (everything is new), or the plan "
                "the cluster runs (plan.yml's summary says which).\n")
    a = recorded_against(changes)
    out = ["# Changes not applied yet", "",
           "Against `%s` (sha256 `%s`), replan: %s. They stay listed, run after run, until site.yml applies "
           "this plan." % (a.get("file"), a.get("sha256"), changes["replan"]), ""]
    out += ["## GPUs", ""]
    if changes["gpus"]:
        out += ["Each re-cut GPU: %s." % RECUT_STEPS, "", "| GPU | now | planned | team | re-cut |", "|---|---|---|---|---|"]
        out += ["| %s GPU %d | %s | %s | %s | %s |" % (
            g["node"], g["gpu"], g["old"], g["new"], g["new_team"] if g["old_team"] == g["new_team"]
            else "%s -> %s" % (g["old_team"], g["new_team"]), "yes" if g["repartitioned"] else "no") for g in changes["gpus"]]
    else:
        out.append("No GPU changes.")
    out += [""] + ["- " + line.strip() for line in dynamic_lines(changes)] if dynamic_lines(changes) else []
    out += ["", "## Pods, per team", "",
            "A pod restarts when its GPU is re-cut or when what it asks for changes (then its team redeploys it "
            "with the manifest change shown, from `teams/<team>/`); nothing else moves a running pod.", ""]
    for team, mine in by_team(changes).items():
        out += ["### %s" % team, ""]
        out += ["- restarts: %s" % restart_line(r)
                for r in mine["restarts"]]
        out += ["- starts: %s replica %d on %s" % (r["workload"], r["replica"], r["new"]) for r in mine["started"]]
        out += ["- ends: %s replica %d (was on %s)" % (r["workload"], r["replica"], r["old"]) for r in mine["ended"]]
        out.append("")
    if not by_team(changes):
        out += ["No pod restarts, starts or ends.", ""]
    if changes["quotas"]:
        out += ["## Quotas", "", "| team | resource | now | planned |", "|---|---|---|---|"]
        out += ["| %s | `%s` | %s | %s |" % (q["team"], q["resource"], q["old"] or 0, q["new"] or 0) for q in changes["quotas"]]
        out.append("")
    if changes["labels"]:
        out += ["## Node labels", "", "| node | label | now | planned |", "|---|---|---|---|"]
        out += ["| %s | `%s` | `%s` | `%s` |" % (x["node"], x["label"], x["old"], x["new"]) for x in changes["labels"]]
        out.append("")
    return "\n".join(out)


def _borrowed(borrower) -> str:
    return " (borrowed by %s)" % borrower if borrower else ""


def admission_lines(plan: dict) -> list[str]:
    """The "What teams may do" section: Pod Security levels (exceptions named), the GPU and
    priority rules (docs/security.md)."""
    spaces = plan["admission"]["namespaces"]
    if not spaces:
        return []
    exceptions = ["`%s` (team %s): %s" % (ns["name"], ns["team"], ns["pod_security"]) for ns in spaces
                  if ns["pod_security"] != "restricted"]
    out = ["", "## What teams may do", "",
           "- Pod Security: `restricted` on every team namespace%s." % (
               ", except " + ", ".join(exceptions) + " (inventory `pod_security`)" if exceptions else ""),
           "- GPUs (%s, any `nvidia.com/gpu*` or `nvidia.com/mig-*`, DRA claims) only through the namespace's "
           "LocalQueue; no NVIDIA runtime class, no `NVIDIA_VISIBLE_DEVICES` (policy `%s`); Kueue holds "
           "unlabelled workloads." % (", ".join("`%s`" % r for r in plan["admission"]["gpu_resources"]) or "none advertised",
                                      names.GPU_ADMISSION_POLICY)]
    for ns in spaces:
        out.append("- `%s` may use WorkloadPriorityClasses %s." % (
            ns["name"], ", ".join("`%s`" % c for c in ns["workload_priority_classes"])))
    pc = plan["admission"]["production_priority_class"]
    out.append("- No `system-*` PriorityClass in team namespaces%s (policy `%s`)." % (
        "; `%s` only in %s" % (pc["name"], ", ".join("`%s`" % ns["name"] for ns in spaces if ns["production"])) if pc else "",
        names.PRIORITY_ADMISSION_POLICY))
    return out


def _limit(allowed: bool, limit) -> str:
    if not allowed:
        return "no"
    return "yes" if limit is None else "up to %d" % limit


def team_lines(plan: dict) -> list[str]:
    """One line per team: namespaces, queues, what it owns, priority, lending and borrowing.

    site.yml prints them after the GPU stack.

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.

    Returns:
        The lines, in the Plan's team order, a list of strings, e.g. ``training: namespaces
        training; LocalQueue training -> ClusterQueue training; owns h200-141gb-whole
        nvidia.com/gpu: 1; priority 100; lends idle quota; may borrow``.
    """
    lines = []
    for t in plan["teams"]:
        owns = ", ".join("%s: %s" % kv for kv in t["owns"].items()) or "nothing"
        lines.append("%s: namespaces %s; LocalQueue %s -> ClusterQueue %s; owns %s; priority %s%s%s"
                     % (t["name"], ", ".join(t["namespaces"]), t["local_queue"], t["cluster_queue"], owns,
                        t["priority"], "; lends idle quota" if t["lend"] else "", "; may borrow" if t["borrow"] else ""))
    return lines
