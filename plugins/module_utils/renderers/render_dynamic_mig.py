# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.md's section on dynamic MIG (planners/dynamic_mig.py): the claims, what Kueue charges
them, and the quota under which every admitted mix places."""

from __future__ import annotations


def _gib(mib: int) -> str:
    return "%.2f GiB" % (mib / 1024.0)


def report_lines(plan: dict) -> list[str]:
    """The section's Markdown lines; none when no GPU is mig-dynamic."""
    dynamic = (plan.get("dra") or {}).get("dynamic_mig") or {}
    if not dynamic.get("gpus"):
        return []
    kubernetes = plan["cluster"].get("kubernetes") or {}
    out = ["", "## Dynamic MIG (slices made per claim)", "",
           "The NVIDIA DRA driver (feature gate `DynamicMIG`) makes a MIG slice when a pod's claim is prepared and "
           "removes it when the claim goes: these GPUs have no fixed layout and are never re-cut or drained. Kueue "
           "charges each claim the `memory` counter of its profile; the quotas are sized so that every mix Kueue may "
           "admit has a placement. Kubernetes %s or newer, with %s." % (
               kubernetes.get("minimum_minor", "?"),
               ", ".join("`%s`" % g for g in sorted(kubernetes.get("feature_gates", {}))) or "no extra feature gate"),
           "", "| model | GPUs | profiles asked for | guaranteed quota | memory counters | cheapest mix no placement holds |",
           "|---|---|---|---|---|---|"]
    for g in dynamic["guarantees"]:
        mix = " + ".join("%d x %s" % (n, p) for p, n in sorted(g["unplaceable_mix"].items()))
        out.append("| %s | %d | %s | %s%s | %s | %s |" % (
            g["model"], g["gpus"], ", ".join(g["profiles"]) or "none", _gib(g["quota_mib"]),
            "" if g["exact"] else " (first-fit bound)", _gib(g["capacity_mib"]),
            "%s (%s)" % (mix, _gib(g["unplaceable_mix_mib"])) if mix else "none"))
    out += ["", "| workload | team | ResourceClaimTemplate | profile | charged |", "|---|---|---|---|---|"]
    for w in dynamic["workloads"]:
        out.append("| %s | %s | `%s` | %s | %d MiB |" % (w["name"], w["team"], w["claim_template"], w["profile"],
                                                         w["charge_mib"]))
    return out
