"""split.svg and report.md checked as a person reads them: the picture rendered to PNG with
cairosvg, each workload of the inventory named, every state of the day drawn with its hours
and time zone, the legend only for what is drawn, text readable on its background (WCAG 2
contrast, computed here from the colours in the SVG), one GPU numbering in the picture, the
report and the README. Expected answers come from the inventory files, not from the renderers.

Set GPUSHARE_PICTURE_DIR to keep the PNGs for a look."""

from __future__ import annotations

import io
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import cairosvg
import pytest
from PIL import Image

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_svg import render_svg

from inventories import EXAMPLE_NAMES, ROOT, load_example

SVG = "{http://www.w3.org/2000/svg}"
PICTURES = {name: render_svg(build_plan(load_example(name))) for name in EXAMPLE_NAMES}


def _texts(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ET.fromstring(svg).iter(SVG + "text")]


def _windows(inventory: dict) -> dict:
    """Window name -> (from, until, [(host, index, schedule entry)]), read from host_vars."""
    found = {}
    for host, node in inventory["gpushare_nodes"].items():
        for gpu in node.get("gpus", []):
            for entry in gpu.get("schedule", []):
                found.setdefault(entry["name"], (entry["from"], entry["until"], []))[2].append((host, gpu["index"], gpu, entry))
    return found


def _zone(inventory: dict) -> str:
    return inventory.get("gpushare_policy", {}).get("timezone", "UTC")


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_picture_names_every_workload_gpu_state_and_time_zone(name, tmp_path):
    inventory = load_example(name)
    svg = PICTURES[name]
    texts = _texts(svg)
    words = "\n".join(texts)
    for workload in inventory["gpushare_workloads"]:
        assert re.search(r"\b%s\b" % re.escape(workload["name"]), words), (name, workload["name"])
    zone = _zone(inventory)
    assert "(times in %s)" % zone in texts[0]
    windows = _windows(inventory)
    panels = [t for t in texts if re.match(r"^(\d\d:\d\d to \d\d:\d\d %s: |All day)" % re.escape(zone), t)]
    assert len(panels) == 1 + len(windows)
    for window, (start, until, _gpus) in windows.items():
        assert "%s to %s %s: window %s" % (start, until, zone, window) in panels
    if len(windows) == 1:
        # One window: the rest of the day is the base state, from its end to its start.
        [(start, until, _gpus)] = list(windows.values())
        assert "%s to %s %s: base state (outside every window)" % (until, start, zone) in panels
    # Every GPU of every server, under its inventory index, once per state.
    for host, node in inventory["gpushare_nodes"].items():
        for index in range(node["gpu_count"]):
            assert sum(1 for t in texts if t.startswith("GPU %d (" % index)) >= len(panels), (host, index)
    assert not [t for t in texts if t.endswith("…")], "a label is cut short"
    # The PNG a person looks at: the whole drawing, every team's colour visible in it.
    png = cairosvg.svg2png(bytestring=svg.encode())
    if os.environ.get("GPUSHARE_PICTURE_DIR"):
        Path(os.environ["GPUSHARE_PICTURE_DIR"], "%s.png" % name).write_bytes(png)
    image = Image.open(io.BytesIO(png)).convert("RGB")
    root = ET.fromstring(svg)
    assert image.size == (int(float(root.get("width"))), int(float(root.get("height"))))
    colours = {colour for _count, colour in image.getcolors(maxcolors=image.width * image.height)}
    # Nothing runs past the panels' right edge (a cut or overflowing label would).
    margin = image.crop((image.width - 8, 0, image.width, image.height))
    assert {colour for _count, colour in margin.getcolors(maxcolors=margin.width * margin.height)} == {(255, 255, 255)}, name
    teams_with_gpus = {g["team"] for n in inventory["gpushare_nodes"].values() for g in n.get("gpus", []) if g.get("team")}
    legend = {"".join(t.itertext()): r.get("fill") for r, t in _legend_entries(root)}
    assert teams_with_gpus <= set(legend)
    for team in teams_with_gpus:
        assert tuple(int(legend[team][i:i + 2], 16) for i in (1, 3, 5)) in colours, (name, team)


def _legend_entries(root):
    """(swatch rect, label text) pairs at the top level of the SVG (the legend)."""
    children = list(root)
    return [(a, b) for a, b in zip(children, children[1:]) if a.tag == SVG + "rect" and b.tag == SVG + "text"
            and a.get("width") == "14"]


def test_the_example_day_draws_the_night_and_the_fine_tune_borrowing_the_lent_gpu():
    """From the inventory: GPU 2 of gpu01 is time-sliced for data-science by day and whole at
    night; data-science has no whole-GPU workload; the fine-tune needs 2 whole GPUs and training
    owns one (GPU 3), so by day it waits and at night it runs on GPU 3 and borrows GPU 2. vLLM is
    production's whole-GPU workload on GPU 0 all day."""
    inventory = load_example("four-gpu-server")
    [(start, until, [(host, lent_index, gpu, _entry)])] = list(_windows(inventory).values())
    fine_tune = next(w for w in inventory["gpushare_workloads"] if w["name"] == "fine-tune")
    owned = [g["index"] for g in inventory["gpushare_nodes"][host]["gpus"] if g["team"] == fine_tune["team"]]
    assert fine_tune["gpus"] == 2 and len(owned) == 1
    vllm_gpu = next(g["index"] for g in inventory["gpushare_nodes"][host]["gpus"] if g["team"] == "production" and g["mode"] == "whole")
    root = ET.fromstring(PICTURES["four-gpu-server"])
    # Bars are <g> with a <title>, in document order: the base state's GPUs, then the night's.
    rows = []
    for text in root.iter(SVG + "text"):
        label = "".join(text.itertext())
        if re.match(r"^GPU \d+ \(", label):
            rows.append([int(label.split()[1])])
        elif rows and text.get("text-anchor") == "middle":
            rows[-1].append(label)
    assert [r[0] for r in rows] == [0, 1, 2, 3] * 2
    day, night = [r[1:] for r in rows[:4]], [r[1:] for r in rows[4:]]
    assert "vllm-chat" in day[vllm_gpu] and "vllm-chat" in night[vllm_gpu]
    assert any("notebooks" in t and "time-sliced x%d" % gpu["replicas"] in t for t in day[lent_index])
    assert any(t.startswith("fine-tune") and "borrowed" in t for t in night[lent_index])
    assert "fine-tune" in night[owned[0]]
    assert "fine-tune" not in day[owned[0]]
    waiting = [t for t in _texts(PICTURES["four-gpu-server"]) if t.startswith("fine-tune (training) waits")]
    assert len(waiting) == 1


def test_legend_only_for_what_is_drawn():
    """Every GPU of the example day has an owning team: no cohort-pool entry. The mixed fleet
    leaves GPUs to the cohort (no team in host_vars): the entry is there."""
    for name in EXAMPLE_NAMES:
        inventory = load_example(name)
        # A GPU without a team, or left out of gpus (auto, no team), belongs to the cohort.
        unowned = any("team" not in g for n in inventory["gpushare_nodes"].values() for g in n.get("gpus", [])) or any(
            len(n.get("gpus", [])) < n["gpu_count"] for n in inventory["gpushare_nodes"].values())
        shared = any(g.get("mode") in ("timeslice", "mps") for n in inventory["gpushare_nodes"].values() for g in n.get("gpus", []))
        legend = ["".join(t.itertext()) for _swatch, t in _legend_entries(ET.fromstring(PICTURES[name]))]
        assert any(t.startswith("cohort pool") for t in legend) == unowned, (name, legend)
        assert any(t.startswith("striped") for t in legend) == shared, (name, legend)
        teams = {t["name"] for t in inventory["gpushare_teams"]}
        assert {t for t in legend if t in teams} <= teams


def _luminance(hex_colour: str, over_white: float = 0.0) -> float:
    """WCAG 2.x relative luminance (https://www.w3.org/TR/WCAG21/#dfn-relative-luminance),
    of the colour with white laid over it at ``over_white`` opacity."""
    channels = []
    for i in (1, 3, 5):
        c = int(hex_colour[i:i + 2], 16)
        c = (c + (255 - c) * over_white) / 255
        channels.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def _contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_text_has_contrast_4_5_with_what_is_behind_it(name):
    """WCAG 2 AA for text: at least 4.5:1 against every colour behind it: a bar's fill and,
    on a striped bar, the fill under the pattern's white stripes; elsewhere the panels' grey."""
    root = ET.fromstring(PICTURES[name])
    stripe = next(root.iter(SVG + "pattern")).find(SVG + "rect")
    assert stripe.get("fill") == "#ffffff"
    stripe_opacity = float(stripe.get("fill-opacity"))
    in_bars = set()
    checked = 0
    for group in root.iter(SVG + "g"):
        rects = group.findall(SVG + "rect")
        if not rects:
            continue
        fill = rects[0].get("fill")
        behind = [_luminance(fill)] + ([_luminance(fill, stripe_opacity)] if len(rects) > 1 else [])
        for text in group.findall(SVG + "text"):
            in_bars.add(text)
            ink = _luminance(text.get("fill"))
            worst = min(_contrast(ink, b) for b in behind)
            assert worst >= 4.5, (name, "".join(text.itertext()), text.get("fill"), fill, round(worst, 2))
            checked += 1
    panel_grey = {r.get("fill") for r in root.iter(SVG + "rect") if r.get("rx") == "6"}
    for text in root.iter(SVG + "text"):
        if text not in in_bars:
            for background in panel_grey | {"#ffffff"}:
                assert _contrast(_luminance(text.get("fill")), _luminance(background)) >= 4.5, "".join(text.itertext())
    # At least one label per GPU in each state.
    gpus = sum(n["gpu_count"] for n in load_example(name)["gpushare_nodes"].values())
    assert checked >= gpus * (1 + len(_windows(load_example(name))))


def test_report_has_the_night_quotas_and_the_time_zone():
    """From the inventory: at night GPU 2 is whole and data-science's, so data-science's quota is
    one whole GPU (by day: five time-sliced replicas); hours in the policy's zone."""
    inventory = load_example("four-gpu-server")
    [(start, until, [(_host, _index, gpu, entry)])] = list(_windows(inventory).values())
    zone = _zone(inventory)
    report = report_markdown(build_plan(inventory))
    night = report[report.index("### Window %s (%s to %s %s)" % (entry["name"], start, until, zone)):]
    assert "### Base state (%s to %s %s)" % (until, start, zone) in report
    assert "| %s | 1 `nvidia.com/gpu`" % gpu["team"] in night
    assert "Sharing windows' times are in %s" % zone in report
    assert "fine-tune (borrowed by training)" in night


def test_one_gpu_numbering_in_the_readme_docs_and_inventory_comments():
    """The picture and report number GPUs by the inventory's index (nvidia-smi's, from 0); the
    README, the sharing-windows page and the example inventory's comments name the example
    day's lent GPU by that same number."""
    inventory = load_example("four-gpu-server")
    [(_start, _until, [(host, lent_index, _gpu, _entry)])] = list(_windows(inventory).values())
    readme = (ROOT / "README.md").read_text()
    assert "switch GPU %d from time-sliced to whole" % lent_index in readme
    assert "borrowing GPU %d" % lent_index in readme
    assert "The example day's GPU %d is time-sliced" % lent_index in (ROOT / "docs" / "sharing-windows.md").read_text()
    host_vars = (ROOT / "inventory-examples" / "four-gpu-server" / "host_vars" / ("%s.yml" % host)).read_text()
    comments = [int(n) for n in re.findall(r"# GPU (\d+):", host_vars)]
    indexes = [int(n) for n in re.findall(r"- index: (\d+)", host_vars)]
    assert comments == indexes
    assert any(t == "GPU %d (time-sliced)" % lent_index for t in _texts(PICTURES["four-gpu-server"]))
