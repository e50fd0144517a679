# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage advisor's advice to files: the proposed inventory (YAML), its diff against the
current one, a Markdown report and one small SVG chart per service (hourly memory and
activity over the window), drawn like split.svg."""

from __future__ import annotations

import difflib
from html import escape

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_svg import PALETTE
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import (
    AUTO, DRA, ISOLATION_TO_SHARING, MIG, MPS, TIMESLICE, WHOLE)

CHART_W, CHART_H, PAD_L, PAD_B = 640, 150, 48, 22


def to_yaml(data) -> str:
    """Block-style YAML with lists indented under their key (yamllint's default)."""
    import yaml   # lazily: the plan module's own requirement, absent in ansible-test's import test

    class Dumper(yaml.SafeDumper):   # pylint: disable=too-many-ancestors
        def increase_indent(self, flow=False, indentless=False):
            return super().increase_indent(flow, False)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=110)


def workloads_file(advice: dict) -> str:
    head = ("---\n# Proposed by gpushare.cluster.usage_advisor from %s, %s to %s (%s days).\n"
            "# Every entry's evidence is in report.md; services without enough data keep their current entry.\n"
            % (advice["source"], advice["window"]["from"], advice["window"]["until"], advice["window"]["days"]))
    return head + to_yaml({"gpushare_workloads": advice["proposal"]["workloads"]})


def node_file(host: str, node: dict) -> str:
    return "---\n# Proposed by gpushare.cluster.usage_advisor for %s (see report.md).\n%s" % (
        host, to_yaml({"gpushare_node": node}))


def unified(current: str, proposed: str, name: str) -> str:
    return "".join(difflib.unified_diff(current.splitlines(True), proposed.splitlines(True),
                                        "current/" + name, "proposed/" + name))


def changes(current_workloads: list, proposed_workloads: list, current_nodes: dict, proposed_nodes: dict) -> list[str]:
    """The differences a person reads first, one line each."""
    out = []
    cur = {w.get("name"): _effective(w) for w in current_workloads if isinstance(w, dict)}
    new = {w["name"]: _effective(w) for w in proposed_workloads}
    for name in new:
        if name not in cur:
            out.append("workload %s: new (%s)" % (name, _short(new[name])))
        else:
            keys = [k for k in sorted(set(cur[name]) | set(new[name])) if cur[name].get(k) != new[name].get(k)]
            for k in keys:
                out.append("workload %s: %s %s -> %s" % (name, k, _val(cur[name].get(k)), _val(new[name].get(k))))
    for name in cur:
        if name not in new:
            out.append("workload %s: removed" % name)
    for host, node in proposed_nodes.items():
        old = {g.get("index"): g for g in (current_nodes.get(host) or {}).get("gpus", []) if isinstance(g, dict)}
        for g in node["gpus"]:
            was = old.get(g["index"], {"mode": AUTO})
            for k in ("mode", "team", "replicas", "schedule"):
                if was.get(k) != g.get(k):
                    out.append("%s GPU %d: %s %s -> %s" % (host, g["index"], k, _val(was.get(k)), _val(g.get(k))))
    return out


def _effective(w: dict) -> dict:
    """A workload entry with its defaults spelled out, so that 'isolation: hardware' and
    'sharing: mig', or a missing 'replicas' and 'replicas: 1', compare equal."""
    out = dict(w)
    isolation = out.pop("isolation", None)
    if "device_request" in out:
        out.setdefault("sharing", DRA)
    out.setdefault("sharing", ISOLATION_TO_SHARING.get(isolation) or (TIMESLICE if out.get("kind") == "notebook" else WHOLE))
    out.setdefault("replicas", 1)
    out.setdefault("gpus", 1)
    return out


def _short(w: dict) -> str:
    return ", ".join("%s %s" % (k, _val(v)) for k, v in w.items() if k not in ("name", "team")
                     and not (k in ("replicas", "gpus") and v == 1))


def _val(v) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, list) and v and isinstance(v[0], dict) and "from" in v[0]:
        return ", ".join("%s %s-%s %s" % (w.get("name"), w.get("from"), w.get("until"), w.get("mode")) for w in v)
    return str(v)


# --------------------------------------------------------------------------- chart


def chart_svg(service: dict, colour: str = PALETTE[0]) -> str:
    """Hourly mean memory (GiB, filled) and activity (GPUs, line) of one service."""
    chart = service.get("chart") or {}
    mem = chart.get("memory_gib") or []
    act = chart.get("gpus_active") or []
    n = max(len(mem), 1)
    top_mem = max([v for v in mem if v is not None] + [(service.get("memory_need_mib") or 0) / 1024.0, 1.0])
    top_act = max([v for v in act if v is not None] + [1.0])
    w, h = CHART_W - PAD_L - 10, CHART_H - PAD_B - 28

    def x(i):
        return PAD_L + w * i / max(n - 1, 1)

    def area(values, top):
        pts, parts = [], []
        for i, v in enumerate(values):
            if v is None:
                if pts:
                    parts.append(pts)
                pts = []
                continue
            pts.append((x(i), 28 + h - h * v / top))
        if pts:
            parts.append(pts)
        return parts
    body = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">'
            % (CHART_W, CHART_H),
            '<title>%s: memory and activity, %s hours from %s</title>'
            % (escape(service["name"]), chart.get("hours", 0), escape(chart.get("start", ""))),
            '<rect x="0" y="0" width="%d" height="%d" fill="#f7f7f7" stroke="#999" rx="6"/>' % (CHART_W, CHART_H),
            '<text x="10" y="18" font-size="13" font-weight="bold">%s</text>' % escape(
                "%s (%s): %s" % (service["name"], service.get("team") or "?", choice_text(service)))]
    for pts in area(mem, top_mem):
        poly = " ".join("%.1f,%.1f" % p for p in pts)
        body.append('<polygon points="%.1f,%d %s %.1f,%d" fill="%s" fill-opacity="0.35" stroke="none"/>'
                    % (pts[0][0], 28 + h, poly, pts[-1][0], 28 + h, colour))
    for pts in area(act, top_act):
        body.append('<polyline points="%s" fill="none" stroke="#333" stroke-width="1"/>'
                    % " ".join("%.1f,%.1f" % p for p in pts))
    need = service.get("memory_need_mib")
    if need:
        y = 28 + h - h * (need / 1024.0) / top_mem
        body.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="4 3"/>'
                    % (PAD_L, y, PAD_L + w, y, "#e15759"))
        body.append('<text x="%d" y="%.1f" font-size="10" fill="#e15759" text-anchor="end">need %.1f GiB</text>'
                    % (PAD_L + w, y - 3, need / 1024.0))
    body += ['<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (PAD_L, 28 + h, PAD_L + w, 28 + h),
             '<text x="4" y="%d" font-size="10">%.0f GiB</text>' % (34, top_mem),
             '<text x="4" y="%d" font-size="10">0</text>' % (28 + h),
             '<text x="%d" y="%d" font-size="10">days of the window (hourly means); filled: memory, line: activity '
             '(GPUs, top %.2f)</text>' % (PAD_L, CHART_H - 6, top_act),
             "</svg>", ""]
    return "\n".join(body)


def choice_text(s: dict) -> str:
    status = s.get("status")
    if status != "ok":
        return status.replace("_", " ")
    if s["sharing"] == MIG:
        return "MIG %s" % s["mig_profile"]
    if s["sharing"] == TIMESLICE:
        return "time-sliced, %d sharers" % s["replicas"]
    if s["sharing"] == MPS:
        return "MPS, %d clients per card, each 1/%d" % (s["gpu_replicas"], s["gpu_replicas"])
    if s["sharing"] == DRA:
        return "DRA, at least %s GiB" % s["memory_gib"]
    if s.get("run_gpus"):      # training and batch: what a run takes, then its pods
        return "whole, %d GPU%s per run (%d pod%s x %d GPU%s)" % (
            s["run_gpus"], "" if s["run_gpus"] == 1 else "s", s["replicas"], "" if s["replicas"] == 1 else "s",
            s["gpus"], "" if s["gpus"] == 1 else "s")
    return "whole, %d GPU%s per replica" % (s["gpus"], "" if s["gpus"] == 1 else "s")


def sharing_text(d: dict) -> str:
    """How a shared device was read (features._sharing_evidence), in words."""
    how = {"duplicated": "its series were copied to every pod on it, so they were read once",
           "once": "its series went to one pod at a time; the service's other running pods (kube-state-metrics) "
                   "were counted on it as sharers",
           "alone": "one pod at a time"}[d["reporting"]]
    others = (" with %s" % ", ".join(d["with"])) if d["with"] else ""
    return ("up to %g pods at once (%g of this service)%s; %s. Its memory and activity are the device's, split "
            "between the services on it by their pods times a per-pod weight fitted by non-negative least squares "
            "(equal weights when they are never apart), then shared by this service's pods up"
            % (d["pods_max"], d["own_pods_max"], others, how))


def chart_name(service: dict) -> str:
    """charts/<service>.<namespace>.svg; a service whose pods ran in several namespaces is named
    after all of them (<ns>+<ns>)."""
    namespaces = service.get("namespaces") or ([service["namespace"]] if service.get("namespace") else [])
    return "charts/%s%s.svg" % (service["name"], "".join("." + "+".join(namespaces)) if namespaces else "")


# --------------------------------------------------------------------------- report


def report_markdown(advice: dict, change_lines: list[str], plan_check: str) -> str:
    w = advice["window"]
    lines = ["# GPU sharing advice", "",
             "From %s, %s to %s (%s days, one sample every %d s, hours in %s)."
             % (advice["source"], w["from"], w["until"], w["days"], w["step_s"], w["timezone"]), "",
             "Proposed inventory: `inventory/`, a copy of the inventory with the proposal in place (plan it with "
             "`ansible-playbook -i <this directory>/inventory/hosts.yml playbooks/plan.yml`); workloads alone: "
             "`workloads.yml`; differences: `proposal.diff`. Nothing is applied.", "",
             "Check of the proposal by the planner: %s." % plan_check, ""]
    if advice.get("calibration"):
        lines += ["Sharing modes compared by measurements on %s, %s (the calibration; `calibration` of the "
                  "usage_advisor module for your own card's)." % (advice["calibration"]["source"],
                                                                  advice["calibration"].get("runs_text", "one run")), ""]
    lines += _outages_section(advice)
    lines += _repairs_section(advice.get("repairs") or [])
    lines += _services_section(advice["services"])
    lines += _unmatched_section(advice.get("unmatched") or [])
    lines += _teams_section(advice)
    lines += _windows_section(advice["windows"])
    lines += _buy_section(advice["buy"])
    lines += ["", "## Changes against the current inventory", ""]
    lines += ["- " + c for c in change_lines] or [no_change_text(advice) + "."]
    if advice["notes"]:
        lines += ["", "## Notes", ""] + ["- " + n for n in advice["notes"]]
    return "\n".join(lines) + "\n"


def no_change_text(advice: dict) -> str:
    """Why the proposal changes nothing: the usage gives no reason, or (said so) no repair
    made the proposal plannable, or nothing could be advised."""
    check = advice.get("plan_check") or {}
    if check.get("status") in ("current", "refused"):
        return "no change: %s" % check.get("text", "")
    if not any(s.get("status") == "ok" for s in advice["services"]):
        return "no change: no service could be advised (see each one's status)"
    return "no change against the current inventory: the usage gives no reason for one"


def _outages_section(advice: dict) -> list[str]:
    """Nodes that reported nothing for a while: their services' presence is measured without
    those hours, so a service reads 'always up' although its node was gone."""
    outages = advice.get("outages") or []
    if not outages:
        return []
    lines = ["## Nodes that reported nothing", ""]
    for o in outages:
        lines.append("- %s: from %s until %s (%g h, %.0f %% of the window)%s" % (
            o["node"], o["from"], o["until"], o["hours"], 100 * o["share"],
            "; more than the advisor allows, its services are not advised" if o["node"] in (advice.get("gaps") or {})
            else ""))
    return lines + ["", "Presence, idle time and activity of the services on these nodes are measured over the time "
                        "the nodes reported (`observed_share` in the evidence); an outage is not a service's absence.", ""]


def _repairs_section(repairs: list[dict]) -> list[str]:
    """What each repair did to make the planner accept the proposal (repair.py)."""
    if not repairs:
        return []
    lines = ["## Repairs", "", "The planner refused the proposal as first placed; these repairs, in order, made it "
             "plannable (docs/advisor.md, \"Repairs\"):", ""]
    for r in repairs:
        lines.append("- `%s`: %s (the planner said: %s)" % (r["rule"], r["did"], "; ".join(r["planner"][:2])))
    return lines + [""]


def _unmatched_section(rows: list[dict]) -> list[str]:
    """Pods that match no workload: what was done with them."""
    if not rows:
        return []
    lines = ["## Pods that match no workload", "",
             "| group | namespace | pods | owners | proposed | why |", "|---|---|---|---|---|---|"]
    for u in rows:
        lines.append("| %s | %s | %d (%s) | %s | %s | %s |" % (
            u["name"], u.get("namespace") or "?", u["pods"], ", ".join(u["examples"]), ", ".join(u["owners"]),
            "yes" if u["proposed"] else "no", u["reason"].replace("|", "/")))
    return lines + ["", "Say which workload such pods belong to with `gpushare_advise_match` (docs/advisor.md, "
                        "\"Workload identity\").", ""]


def _services_section(services: list[dict]) -> list[str]:
    """The table of services, then per service its evidence, its choice and the rule that
    decided it (docs/advisor.md, "Rules")."""
    lines = ["## Services", "",
             "| service | team | kind (detected) | declared | memory need | compute need | choice | rule | status |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in services:
        d = s.get("declared") or {}
        declared = "%s %s" % (d.get("kind", ""), d.get("sharing", "")) if d else "not in inventory"
        ok = s.get("status") == "ok"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s["name"], s.get("team") or "?", s.get("kind", "-"), declared.strip(),
            "%.1f GiB" % (s["memory_need_mib"] / 1024.0) if s.get("memory_need_mib") else "-",
            "%.2f GPU" % s["compute_need"] if s.get("compute_need") is not None else "-",
            choice_text(s) if ok else "-", "`%s`" % s["rule"] if ok and s.get("rule") else "-", s.get("status", "")))
    lines.append("")
    for s in services:
        lines += _service_lines(s)
    return lines


def _service_lines(s: dict) -> list[str]:
    lines = ["### %s" % s["name"], ""]
    if s.get("status") != "ok":
        lines += ["**%s**: %s" % (s.get("status", "").replace("_", " "), s.get("reason", "")), ""]
    ident = s.get("identity") or {}
    if ident.get("pods"):
        how = {"match": "its selectors in gpushare_advise_match", "name": "its name (controller named %s)" % s["name"],
               "name-prefix": "its name (controllers named %s-...)" % s["name"],
               "unmatched": "no workload (grouped by controller)"}[ident["rule"]]
        lines.append("- pods: %d, recognised by %s: %s%s (owners: %s)%s" % (
            ident["pods"], how, ", ".join(ident.get("examples", [])), " ..." if ident["pods"] > 5 else "",
            ", ".join(ident.get("owners", [])),
            "; in namespaces %s" % ", ".join(s["namespaces"]) if s.get("namespaces") else ""))
    for d in (s.get("evidence") or {}).get("sharing") or []:
        lines.append("- shared device %s: %s" % (d["device"], sharing_text(d)))
    if s.get("repaired"):
        lines.append("- repaired: `%s`, %s" % (s["repaired"]["rule"], s["repaired"]["to"]))
    if s.get("kind"):
        lines.append("- kind: **%s**, %s" % (s["kind"], s.get("kind_why", "")))
    if s.get("memory_note"):
        lines.append("- memory: %s -> %.1f GiB" % (s["memory_note"], s["memory_need_mib"] / 1024.0))
    if s.get("compute_note"):
        lines.append("- compute: %s" % s["compute_note"])
    if s.get("why"):
        rule = " (rule `%s`)" % s["rule"] if s.get("rule") else ""
        lines.append("- choice: **%s**%s: %s" % (choice_text(s), rule, s["why"]))
    if s.get("halves"):
        lines.append("- both halves of the window: %s" % " | ".join(s["halves"]))
    if s.get("idle_hours") is not None:
        lines.append("- idle hours: %s" % _hours(s["idle_hours"]))
    if s.get("chart"):
        lines += ["", "![%s](%s)" % (s["name"], chart_name(s))]
    lines.append("")
    return lines


def _teams_section(advice: dict) -> list[str]:
    lines = ["## Teams", "",
             "| team | GPUs in use (p%g) | max | mean | quota proposed | owns now | idle hours |" % (
                 advice["settings"]["quota_percentile"]), "|---|---|---|---|---|---|---|"]
    for t in advice["teams"]:
        lines.append("| %s | %s | %s | %s | %d | %d | %s |" % (
            t["team"], t["gpus_in_use_p"], t["gpus_in_use_max"], t["gpus_in_use_mean"], t["quota_proposed"],
            t["gpus_owned_now"], _hours(t["idle_hours"])))
    return lines + ["", "GPUs in use: whole GPUs, MIG slices as their share of the card, a time-sliced GPU once.", ""]


def _windows_section(windows: list[dict]) -> list[str]:
    lines = ["## Sharing windows", ""]
    if windows:
        for win in windows:
            lines.append("- **%s** %s-%s: GPUs %s become %s. %s" % (
                win["name"], win["from"], win["until"], ", ".join("%s/%d" % tuple(g) for g in win["gpus"]),
                win.get("mode", WHOLE), win["why"]))
    else:
        lines.append("None proposed: no lending team's time-sliced GPUs are idle long enough while a borrowing team "
                     "runs training or batch work.")
    return lines


def _buy_section(buy: dict) -> list[str]:
    lines = ["", "## GPUs to buy", "", buy["note"] + ".", ""]
    if buy["short"]:
        lines += ["Does not fit the current servers: " + "; ".join(buy["short"]) + ".", ""]
    lines += ["| model | cards for the demand | owned | to buy | cost |", "|---|---|---|---|---|"]
    for row in buy["options"][:8]:
        cost = "%g" % row["cost"] if "cost" in row else "-"
        lines.append("| %s | %d | %d | %d | %s |" % (row["model"], row["cards"], row["owned"], row["to_buy"], cost))
    if not buy["priced"]:
        lines += ["", "Give `gpushare_policy.gpu_prices` (model: price of one card) to rank by cost."]
    return lines


def _hours(hours: list[int]) -> str:
    if not hours:
        return "none"
    if len(hours) == 24:
        return "all day"
    runs, start, prev = [], hours[0], hours[0]
    for h in hours[1:] + [None]:
        if h is not None and h == prev + 1:
            prev = h
            continue
        runs.append((start, prev + 1))
        if h is not None:
            start = prev = h
    if len(runs) > 1 and runs[0][0] == 0 and runs[-1][1] == 24:
        runs = [(runs[-1][0], runs[0][1])] + runs[1:-1]
    return ", ".join("%02d:00-%02d:00" % (a, b % 24) for a, b in runs)
