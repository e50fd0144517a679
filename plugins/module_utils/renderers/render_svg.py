# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to split.svg: each server, each GPU as a bar on its MIG grid, coloured by team."""

from __future__ import annotations

from html import escape

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG, MPS, TIMESLICE, WHOLE

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#ff9da7", "#9c755f"]
POOL_COLOUR = "#bab0ac"
BAR_X, BAR_W, ROW_H, GAP = 150, 620, 36, 8


def _colours(plan: dict) -> dict:
    return {t["name"]: PALETTE[i % len(PALETTE)] for i, t in enumerate(plan["teams"])}


def _fit(text: str, width: float) -> str:
    """Shorten a label to what fits in ``width`` pixels at 11px sans-serif."""
    room = max(int(width / 6.5), 1)
    return text if len(text) <= room else text[:max(room - 1, 1)] + "…"


def _rect(x, y, w, h, fill, label, title, pattern=False, sublabel="") -> str:
    parts = ['<g><title>%s</title>' % escape(title),
             '<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="3" fill="%s" stroke="#333" stroke-width="1"/>'
             % (x, y, w, h, fill)]
    if pattern:
        parts.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="3" style="fill:url(#stripes)"/>'
                     % (x, y, w, h))
    lines = [(label, 11)] + ([(sublabel, 10)] if sublabel else [])
    for i, (text, size) in enumerate(lines):
        baseline = y + h / 2 + 4 + (i - (len(lines) - 1) / 2) * 13
        parts.append('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="middle" fill="#fff">%s</text>'
                     % (x + w / 2, baseline, size, escape(_fit(text, w - 4))))
    parts.append("</g>")
    return "".join(parts)


def _mig_bar(gpu: dict, model, row: float, colours: dict) -> list[str]:
    """One box per MIG slice at its place on the card's grid."""
    grid = model.mig_grid
    bars = []
    for s in gpu["mig"]["slices"]:
        x = BAR_X + BAR_W * s["start"] / grid
        w = BAR_W * s["size"] / grid
        who = s["workload"] or "spare"
        bars.append(_rect(x, row, w, ROW_H, colours.get(s["team"], POOL_COLOUR), who,
                          "%s at %d: %s (%s), %d MiB" % (s["profile"], s["start"], who,
                                                         s["team"] or "cohort", s["memory_mib"]),
                          sublabel=s["profile"]))
    if not gpu["mig"]["slices"]:
        bars.append(_rect(BAR_X, row, BAR_W, ROW_H, "#ddd", "MIG, unpartitioned", "no MIG instances"))
    return bars


def _shared_bar(gpu: dict, model, row: float, colours: dict) -> list[str]:
    """A striped bar: the card is shared by its replicas."""
    label = "%s x%d  %s" % (gpu["mode"], gpu["replicas"], gpu["team"])
    return [_rect(BAR_X, row, BAR_W, ROW_H, colours.get(gpu["team"], POOL_COLOUR), label,
                  "%s replicas of %s" % (gpu["replicas"], gpu["resource"]), pattern=True)]


def _whole_bar(gpu: dict, model, row: float, colours: dict) -> list[str]:
    return [_rect(BAR_X, row, BAR_W, ROW_H, colours.get(gpu["team"], POOL_COLOUR),
                  "whole  %s" % (gpu["team"] or "cohort pool"), "whole GPU -> %s" % gpu["resource"])]


# A Plan GPU's mode -> how its bar is drawn (every GPU mode of sharing_modes.MODES).
GPU_BARS = {WHOLE: _whole_bar, MIG: _mig_bar, TIMESLICE: _shared_bar, MPS: _shared_bar}


def render_svg(plan: dict) -> str:
    colours = _colours(plan)
    body = []
    y = 40
    for node in plan["nodes"]:
        model = CATALOG[node["model"]]
        notes = sum(1 for w in plan["windows"] for g in w["gpus"] if g["node"] == node["name"])
        height = len(node["gpus"]) * (ROW_H + GAP) + 30 + 16 * notes
        body.append('<rect x="10" y="%d" width="%d" height="%d" rx="6" fill="#f7f7f7" stroke="#999"/>'
                    % (y, BAR_X + BAR_W + 20, height))
        body.append('<text x="20" y="%d" font-size="13" font-weight="bold">%s - %d x %s</text>'
                    % (y + 18, escape(node["name"]), node["gpu_count"], escape(model.product_name)))
        row = y + 28
        for gpu in node["gpus"]:
            body.append('<text x="20" y="%d" font-size="12">GPU %d (%s)</text>' % (row + 21, gpu["index"], gpu["mode"]))
            body += GPU_BARS[gpu["mode"]](gpu, model, row, colours)
            row += ROW_H + GAP
        for window in plan["windows"]:
            for g in window["gpus"]:
                if g["node"] == node["name"]:
                    body.append('<text x="%d" y="%d" font-size="11" fill="#555">GPU %d, %s to %s: %s (%s)</text>'
                                % (BAR_X, row + 8, g["index"], window["from"], window["until"], g["mode"],
                                   escape(g["team"] or "cohort")))
                    row += 16
        y += height + 14
    legend = []
    x = 20
    for name, colour in list(colours.items()) + [("cohort pool", POOL_COLOUR)]:
        legend.append('<rect x="%d" y="12" width="14" height="14" fill="%s"/><text x="%d" y="24" font-size="12">%s</text>'
                      % (x, colour, x + 18, escape(name)))
        x += 30 + 8 * len(name)
    width = BAR_X + BAR_W + 40
    return "\n".join([
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (width, y + 10),
        '<defs><pattern id="stripes" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="4" height="8" fill="#ffffff" fill-opacity="0.25"/></pattern></defs>',
        '<title>GPU split: %s</title>' % escape(plan["cluster"]["name"]),
    ] + legend + body + ["</svg>", ""])
