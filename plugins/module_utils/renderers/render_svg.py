# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to split.svg: one panel per state of the day (the base state, then each sharing
window, with its hours in the Plan's time zone), each server, each GPU as a bar on its MIG
grid, coloured by the team that owns it and labelled with the workloads on it.

GPUs are numbered as the inventory's ``index``, which is nvidia-smi's index (from 0), the
MIG Manager's ``devices`` and DCGM's ``gpu`` label: what a person types to look at the card.
Text is black or white, whichever contrasts more with the bar behind it (stripes included).
"""

from __future__ import annotations

import textwrap
from functools import lru_cache
from html import escape

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import (
    DRA, MIG, MIG_DYNAMIC, MODES, MPS, TIMESLICE, WHOLE)
from ansible_collections.gpushare.cluster.plugins.module_utils.names import GPU_RESOURCE
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.day_states import day_states, switch_text, switches

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#ff9da7", "#9c755f"]
POOL_COLOUR = "#bab0ac"
UNCUT_COLOUR = "#dddddd"
STRIPE_WHITE = 0.25            # opacity of the white stripes over a shared GPU's bar
BAR_X, BAR_W, ROW_H, GAP, NOTE_H = 170, 640, 36, 8, 16
WIDTH = BAR_X + BAR_W + 40
NOTE_CHARS = int((WIDTH - BAR_X - 40) / 6.2)    # 11px sans-serif is about 6.2 px a character


def _colours(plan: dict) -> dict:
    return {t["name"]: PALETTE[i % len(PALETTE)] for i, t in enumerate(plan["teams"])}


def _rgb(colour: str) -> tuple[int, ...]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def _luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0-255 channels)."""
    lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


@lru_cache(maxsize=None)
def _ink(fill: str, striped: bool) -> str:
    """Black or white, whichever keeps the higher contrast with every colour behind the text
    (the fill, and the fill under a white stripe)."""
    rgb = _rgb(fill)
    behind = [rgb] + ([tuple(c + (255 - c) * STRIPE_WHITE for c in rgb)] if striped else [])
    lums = [_luminance(c) for c in behind]
    on_black = min((lum + 0.05) / 0.05 for lum in lums)
    on_white = min(1.05 / (lum + 0.05) for lum in lums)
    return "#000000" if on_black >= on_white else "#ffffff"


def _fit(text: str, width: float) -> str:
    """Shorten a label to what fits in ``width`` pixels at 11px sans-serif."""
    room = max(int(width / 6.5), 1)
    return text if len(text) <= room else text[:max(room - 1, 1)] + "…"


class _Canvas:
    """The SVG elements drawn so far, and what the legend must explain."""

    def __init__(self, colours: dict):
        self.colours = colours
        self.parts: list[str] = []
        self.teams_drawn: set = set()
        self.pool_drawn = self.stripes_drawn = False

    def fill_of(self, team) -> str:
        if team is None:
            self.pool_drawn = True
            return POOL_COLOUR
        self.teams_drawn.add(team)
        return self.colours[team]

    def text(self, x, y, text, size=12, weight="normal", colour="#000000", anchor="start"):
        self.parts.append('<text x="%.1f" y="%.1f" font-size="%d" font-weight="%s" fill="%s" text-anchor="%s">%s</text>'
                          % (x, y, size, weight, colour, anchor, escape(text)))

    def draw_bar(self, x, y, w, team, label, title, striped=False, sublabel="", fill=None):
        fill = fill or self.fill_of(team)
        self.stripes_drawn |= striped
        self.parts.append('<g><title>%s</title>' % escape(title))
        self.parts.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" rx="3" fill="%s" stroke="#333" stroke-width="1"/>'
                          % (x, y, w, ROW_H, fill))
        if striped:
            self.parts.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" rx="3" fill="url(#stripes)"/>' % (x, y, w, ROW_H))
        ink = _ink(fill, striped)
        lines = [(label, 11)] + ([(sublabel, 10)] if sublabel else [])
        for i, (text, size) in enumerate(lines):
            baseline = y + ROW_H / 2 + 4 + (i - (len(lines) - 1) / 2) * 13
            self.text(x + w / 2, baseline, _fit(text, w - 4), size=size, colour=ink, anchor="middle")
        self.parts.append("</g>")


def _mig_bar(canvas: _Canvas, gpu: dict, model, row: float, state: dict, node: dict) -> None:
    """One box per MIG slice at its place on the card's grid."""
    grid = model.mig_grid
    for s in gpu["mig"]["slices"]:
        who = s["workload"] or "spare"
        canvas.draw_bar(BAR_X + BAR_W * s["start"] / grid, row, BAR_W * s["size"] / grid, s["team"], who,
                        "%s at %d: %s (%s), %d MiB" % (s["profile"], s["start"], who, s["team"] or "cohort pool", s["memory_mib"]),
                        sublabel=s["profile"])
    if not gpu["mig"]["slices"]:
        canvas.draw_bar(BAR_X, row, BAR_W, None, "MIG, unpartitioned", "no MIG instances", fill=UNCUT_COLOUR)


def _shared_bar(canvas: _Canvas, gpu: dict, model, row: float, state: dict, node: dict) -> None:
    """A striped bar: the card is shared by its replicas, taking turns."""
    names = state["sharers"].get((gpu["mode"], gpu["team"]), [])
    label = "%s%s x%d" % (", ".join(names) + ": " if names else "", MODES[gpu["mode"]].words, gpu["replicas"])
    canvas.draw_bar(BAR_X, row, BAR_W, gpu["team"], label, "%s replicas of %s" % (gpu["replicas"], gpu["resource"]),
                    striped=True, sublabel=gpu["team"] or "cohort pool")


def _whole_bar(canvas: _Canvas, gpu: dict, model, row: float, state: dict, node: dict) -> None:
    """The whole-GPU workloads a person should expect on it, and whose GPU it is when lent."""
    owner = gpu["team"] or "cohort pool"
    if gpu.get("resource") != GPU_RESOURCE:
        label, sub = "DRA device", owner
    else:
        use = state["whole"][(node["name"], gpu["index"])]
        if not use["workloads"]:
            label, sub = "idle", "whole, %s's" % owner
        elif use["borrower"]:
            label = "%s (%s, borrowed)" % (", ".join(use["workloads"]), use["borrower"])
            sub = "whole, %s's, lent to %s" % (owner, use["borrower"])
        else:
            label, sub = ", ".join(use["workloads"]), "whole, %s" % owner
    canvas.draw_bar(BAR_X, row, BAR_W, gpu["team"], label, "whole GPU -> %s" % gpu["resource"], sublabel=sub)


def _dynamic_note(plan: dict, node: dict) -> str:
    """Which claims the node's dynamic GPUs serve, and the quota that every mix of them places in."""
    claims = ", ".join("%s %s (%s)" % (w["name"], w["profile"], w["team"]) for w in plan["dra"]["dynamic_mig"]["workloads"]
                       if w["model"] == node["model"])
    quota = next((g for g in plan["dra"]["dynamic_mig"]["guarantees"] if g["model"] == node["model"]), None)
    sold = " Quota %.1f of %.1f GiB: every mix within it places." % (quota["quota_mib"] / 1024.0,
                                                                     quota["capacity_mib"] / 1024.0) if quota else ""
    return "Dynamic MIG claims (slices made on any of these GPUs): %s.%s" % (claims or "none", sold)


def _dynamic_bar(canvas: _Canvas, gpu: dict, model, row: float, state: dict, node: dict) -> None:
    """One bar for the card and no slices: they exist only while claims hold them."""
    names = state["sharers"].get((gpu["mode"], gpu["team"]), [])
    canvas.draw_bar(BAR_X, row, BAR_W, gpu["team"], "%sdynamic MIG" % (", ".join(names) + ": " if names else ""),
                    "MIG slices made by the DRA driver when a claim is prepared -> %s" % gpu["resource"],
                    sublabel=gpu["team"] or "cohort pool")


# A Plan GPU's mode -> how its bar is drawn (every GPU mode of sharing_modes.MODES).
GPU_BARS = {WHOLE: _whole_bar, MIG: _mig_bar, TIMESLICE: _shared_bar, MPS: _shared_bar, MIG_DYNAMIC: _dynamic_bar}


def state_title(state: dict) -> str:
    """``07:00 to 19:00 UTC: base state (outside every window)``, ``19:00 to 07:00 UTC: window night``."""
    hours = ", ".join("%s to %s" % h for h in state["hours"])
    if state["window"] is not None:
        return "%s %s: window %s" % (hours, state["timezone"], state["window"])
    if hours:
        return "%s %s: base state (outside every window)" % (hours, state["timezone"])
    return "All day: no sharing windows"


def _panel(canvas: _Canvas, plan: dict, state: dict, y: float) -> float:
    sharers = {}                # (sharing mode, team) -> workload names, for the shared GPUs' labels
    for w in plan["workloads"]:
        sharers.setdefault((w["sharing"], w["team"]), []).append(w["name"])
    dra_claims = ", ".join("%s (%s)" % (w["name"], w["team"]) for w in plan["workloads"] if w["sharing"] == DRA)
    state = dict(state, sharers=sharers)
    canvas.text(10, y + 16, state_title(state), size=14, weight="bold")
    y += 26
    for node in state["nodes"]:
        model = CATALOG[node["model"]]
        notes = ["DRA claims go to these devices: %s" % dra_claims] if node["dra"] and dra_claims else []
        notes += [_dynamic_note(plan, node)] if any(g["mode"] == MIG_DYNAMIC for g in node["gpus"]) else []
        notes += state["waiting"] + state["switches"] if node is state["nodes"][-1] else []
        notes = [line for note in notes for line in textwrap.wrap(note, NOTE_CHARS, subsequent_indent="  ")]
        height = len(node["gpus"]) * (ROW_H + GAP) + 30 + NOTE_H * len(notes)
        canvas.parts.append('<rect x="10" y="%.1f" width="%d" height="%d" rx="6" fill="#f7f7f7" stroke="#999"/>'
                            % (y, WIDTH - 20, height))
        canvas.text(20, y + 18, "%s - %d x %s%s" % (node["name"], node["gpu_count"], model.product_name,
                                                    ", DRA-served" if node["dra"] else ""), size=13, weight="bold")
        row = y + 28
        for gpu in node["gpus"]:
            canvas.text(20, row + 22, "GPU %d (%s)" % (gpu["index"], MODES[gpu["mode"]].words))
            GPU_BARS[gpu["mode"]](canvas, gpu, model, row, state, node)
            row += ROW_H + GAP
        for note in notes:
            canvas.text(BAR_X, row + 8, note, size=11, colour="#333333")
            row += NOTE_H
        y += height + 10
    return y + 8


def _legend(canvas: _Canvas, y: float) -> tuple[list[str], float]:
    """Only what is drawn: the teams whose colour appears, the cohort pool, the stripes; in
    rows that fit the width. Returns the elements and the y below them."""
    items = [(name, colour, False) for name, colour in canvas.colours.items() if name in canvas.teams_drawn]
    if canvas.pool_drawn:
        items.append(("cohort pool (no owner)", POOL_COLOUR, False))
    if canvas.stripes_drawn:
        items.append(("striped: pods take turns (time-sliced or MPS)", "#999999", True))
    parts, x = [], 20
    for name, colour, striped in items:
        step = 30 + 7 * len(name)
        if x > 20 and x + step > WIDTH:
            x, y = 20, y + 20
        parts.append('<rect x="%d" y="%.1f" width="14" height="14" fill="%s" stroke="#333"/>' % (x, y, colour))
        if striped:
            parts.append('<rect x="%d" y="%.1f" width="14" height="14" fill="url(#stripes)"/>' % (x, y))
        parts.append('<text x="%d" y="%.1f" font-size="12" fill="#000000">%s</text>' % (x + 18, y + 12, escape(name)))
        x += step
    return parts, y + 26


def render_svg(plan: dict) -> str:
    canvas = _Canvas(_colours(plan))
    zone = plan["cluster"]["timezone"]
    y = 0.0
    found = switches(plan)
    for state in day_states(plan):
        # What the switch into this state does to running work (day_states.switches).
        into = [switch_text(plan, s, short=True) for s in found if s["new"] == state["window"]]
        y = _panel(canvas, plan, dict(state, switches=into), y)
    legend, top = _legend(canvas, 48)
    head = ['<text x="10" y="20" font-size="15" font-weight="bold" fill="#000000">%s</text>'
            % escape("GPU split of %s by time of day (times in %s)" % (plan["cluster"]["name"], zone)),
            '<text x="10" y="38" font-size="11" fill="#333333">%s</text>'
            % escape("GPU n is the inventory's index (nvidia-smi -i n); a whole GPU shows the workloads Kueue admits on it.")]
    return "\n".join([
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (WIDTH, top + y + 4),
        '<defs><pattern id="stripes" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="4" height="8" fill="#ffffff" fill-opacity="%s"/></pattern></defs>' % STRIPE_WHITE,
        '<title>GPU split: %s</title>' % escape(plan["cluster"]["name"]),
        '<rect width="100%" height="100%" fill="#ffffff"/>',
    ] + head + legend + ['<g transform="translate(0,%.1f)">' % top] + canvas.parts + ["</g>", "</svg>", ""])
