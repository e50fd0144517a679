# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_catalog: lookups, geometry invariants, memory figures and their sources."""

import dataclasses
import re

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu_catalog import (
    CATALOG,
    lookup,
    lookup_pci,
    mig_config_device_filter,
    suggest,
)

REQUIRED_KEYS = {"a100-40gb", "a100-80gb", "a30", "h100-80gb", "h100-94gb", "h100-96gb", "gh200-144gb",
                 "h200-141gb", "b200", "b300", "rtx-pro-6000", "l4", "l40s", "l40", "a10", "t4"}
NO_MIG = ("l4", "l40s", "l40", "a10", "t4")
ALL_MODELS = sorted(CATALOG)
MIG_MODELS = sorted(k for k, m in CATALOG.items() if m.mig_capable)
ALL_PROFILES = [(k, p.name) for k in MIG_MODELS for p in CATALOG[k].mig_profiles]


def _p(key, name):
    return CATALOG[key].profile(name)


# --- contents ------------------------------------------------------------------------

def test_every_requested_card_is_there():
    assert REQUIRED_KEYS <= set(CATALOG)
    assert all(k == m.key for k, m in CATALOG.items())


@pytest.mark.parametrize("key", ALL_MODELS)
def test_model_fields(key):
    m = CATALOG[key]
    assert m.source.strip()
    assert m.product_name and m.label_product == m.product_name.replace(" ", "-")
    assert m.architecture in ("Ampere", "Hopper", "Blackwell", "Ada Lovelace", "Turing")
    assert m.pci_device_ids and all(re.fullmatch(r"0x[0-9a-f]{4}", p) for p in m.pci_device_ids)
    assert all(a == a.lower() and a.strip() for a in m.aliases)
    assert m.memory_mib > 10000
    assert m.mig_capable == bool(m.mig_profiles) == (m.mig_grid > 0)


def test_models_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOG["h200-141gb"].memory_mib = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOG["h200-141gb"].mig_profiles[0].size = 3


@pytest.mark.parametrize("key", NO_MIG)
def test_cards_without_mig(key):
    m = CATALOG[key]
    assert not m.mig_capable and m.mig_grid == 0 and m.mig_profiles == () and m.base_profiles == ()
    with pytest.raises(KeyError, match="no MIG profiles"):
        m.profile("1g.10gb")


def test_known_pci_ids_and_memory_of_cards_without_mig():
    expected = {"l4": ("0x27b8", 23034), "l40s": ("0x26b9", 46068), "l40": ("0x26b5", 46068),
                "a10": ("0x2236", 23028), "t4": ("0x1eb8", 15360)}
    for key, (pci, mib) in expected.items():
        assert CATALOG[key].pci_device_ids == (pci,) and CATALOG[key].memory_mib == mib


def test_grids():
    assert {k: CATALOG[k].mig_grid for k in ("a30", "rtx-pro-6000", "h200-141gb", "a100-40gb")} == {
        "a30": 4, "rtx-pro-6000": 12, "h200-141gb": 8, "a100-40gb": 8}
    assert all(CATALOG[k].mig_grid == 8 for k in MIG_MODELS if k not in ("a30", "rtx-pro-6000"))


# --- geometry --------------------------------------------------------------------------

SEVEN_WAY_GEOMETRY = [  # §1.2: (compute, size, starts, max) in the order 1g, 1g+me, 1g double, 2g, 3g, 4g, 7g
    (1, 1, (0, 1, 2, 3, 4, 5, 6), 7), (1, 1, (0, 1, 2, 3, 4, 5, 6), 1), (1, 2, (0, 2, 4, 6), 4),
    (2, 2, (0, 2, 4), 3), (3, 4, (0, 4), 2), (4, 4, (0,), 1), (7, 8, (0,), 1)]


@pytest.mark.parametrize("key", [k for k in MIG_MODELS if CATALOG[k].mig_grid == 8])
def test_seven_way_family_matches_placement_table(key):
    m = CATALOG[key]
    got = [(p.compute_slices, p.size, p.starts, p.max_count) for p in m.mig_profiles]
    assert got == SEVEN_WAY_GEOMETRY
    assert [p.variant for p in m.mig_profiles] == ["", "+me", "", "", "", "", ""]


def test_same_name_different_geometry():
    h200 = _p("h200-141gb", "1g.35gb")
    assert (h200.size, h200.max_count, h200.starts, h200.compute_slices) == (2, 4, (0, 2, 4, 6), 1)
    gb300 = _p("gb300", "1g.35gb")
    assert (gb300.size, gb300.max_count) == (1, 7)
    assert h200.memory_mib != gb300.memory_mib


def test_a30():
    m = CATALOG["a30"]
    assert [(p.name, p.size, p.starts, p.max_count) for p in m.mig_profiles] == [
        ("1g.6gb", 1, (0, 1, 2, 3), 4), ("1g.6gb+me", 1, (0, 1, 2, 3), 1), ("2g.12gb", 2, (0, 2), 2),
        ("2g.12gb+me", 2, (0, 2), 1), ("4g.24gb", 4, (0,), 1)]
    assert m.pci_device_ids == ("0x20b7",)


def test_rtx_pro_6000_twelve_unit_grid():
    m = CATALOG["rtx-pro-6000"]
    one_g = [p for p in m.mig_profiles if p.compute_slices == 1]
    assert {p.name for p in one_g} == {"1g.24gb", "1g.24gb+me", "1g.24gb+gfx", "1g.24gb+me.all", "1g.24gb-me"}
    assert all(set(p.starts) == {0, 3, 6, 9} and p.size == 3 for p in one_g)
    assert all(p.starts == (0, 6) and p.size == 6 for p in m.mig_profiles if p.compute_slices == 2)
    assert all(p.starts == (0,) and p.size == 12 for p in m.mig_profiles if p.compute_slices == 4)
    assert {p.name: p.max_count for p in m.mig_profiles} == {
        "1g.24gb": 4, "1g.24gb+me": 1, "1g.24gb+gfx": 4, "1g.24gb+me.all": 1, "1g.24gb-me": 4,
        "2g.48gb": 2, "2g.48gb+gfx": 2, "2g.48gb+me.all": 1, "2g.48gb-me": 2, "4g.96gb": 1, "4g.96gb+gfx": 1}
    assert [p.name for p in m.base_profiles] == ["1g.24gb", "2g.48gb", "4g.96gb"]
    assert {p.variant for p in m.mig_profiles} == {"", "+me", "+gfx", "+me.all", "-me"}
    assert "0x2bb5" in m.pci_device_ids


@pytest.mark.parametrize("key,name", ALL_PROFILES)
def test_profile_fits_grid(key, name):
    m, p = CATALOG[key], _p(key, name)
    assert p.size >= 1 and p.starts and list(p.starts) == sorted(set(p.starts))
    assert all(0 <= s and s + p.size <= m.mig_grid for s in p.starts)
    assert all(s % p.size == 0 for s in p.starts)          # true of every table in §1
    full = max(q.compute_slices for q in m.mig_profiles)   # 7 on the 7-way family, 4 on A30/RTX PRO
    assert 1 <= p.max_count and p.compute_slices * p.max_count <= full
    # max_count instances of this profile alone can be placed without overlap
    placed = []
    for s in p.starts:
        if all(s >= t + p.size for t in placed):
            placed.append(s)
    assert len(placed) >= p.max_count


@pytest.mark.parametrize("key,name", ALL_PROFILES)
def test_profile_name_and_variant(key, name):
    p = _p(key, name)
    m = re.fullmatch(r"([1-9])g\.([0-9]+)gb(\+me\.all|\+me|\+gfx|-me)?", p.name)
    assert m and int(m.group(1)) == p.compute_slices and (m.group(3) or "") == p.variant
    assert p.media_extensions == (p.variant in ("+me", "+me.all"))
    if p.media_extensions:
        assert p.max_count == 1                             # "a single 1g profile can include media extensions"
    assert p.source.strip()


def _feasible(model, counts):
    """Brute force (depth-first over start slots): can these profile counts be placed without overlap?"""
    if any(c > model.profile(n).max_count for n, c in counts.items()):
        return False
    items = sorted((model.profile(n) for n, c in counts.items() for _copy in range(c)), key=lambda p: -p.size)

    def place(i, used, last):
        if i == len(items):
            return True
        p = items[i]
        same = i > 0 and items[i - 1] is p                 # identical instances: increasing starts only
        for s in p.starts:
            cells = set(range(s, s + p.size))
            if (not same or s > last) and not used & cells and place(i + 1, used | cells, s):
                return True
        return False

    return place(0, frozenset(), -1)


@pytest.mark.parametrize("key,balanced", [
    # mig-parted all-balanced, §1.14
    ("a100-40gb", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}), ("a100-80gb", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    ("h100-80gb", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}), ("h100-94gb", {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
    ("h100-96gb", {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}), ("gh200-144gb", {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1}),
    ("h200-141gb", {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}), ("b200", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
    ("b300", {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1}), ("gb200", {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1}),
    ("gb300", {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1}), ("a30", {"1g.6gb": 2, "2g.12gb": 1}),
    ("rtx-pro-6000", {"1g.24gb": 2, "2g.48gb": 1}),
])
def test_mig_parted_all_balanced_is_feasible(key, balanced):
    assert _feasible(CATALOG[key], balanced)


def test_placement_consequences_from_the_reference():
    h100 = CATALOG["h100-80gb"]
    assert _feasible(h100, {"4g.40gb": 1, "3g.40gb": 1})                 # valid since R510
    assert _feasible(h100, {"1g.10gb": 7})
    assert not _feasible(h100, {"1g.10gb": 7, "1g.20gb": 1})             # slice 7 alone cannot hold a 1g.20gb
    assert not _feasible(h100, {"3g.40gb": 1, "1g.10gb": 5})             # a 3g blocks 1g starts 4..6 or 0..3
    assert not _feasible(h100, {"1g.10gb+me": 2})
    assert not _feasible(CATALOG["a30"], {"2g.12gb": 1, "2g.12gb+me": 1, "1g.6gb": 1})
    assert _feasible(CATALOG["rtx-pro-6000"], {"2g.48gb": 1, "1g.24gb": 1, "1g.24gb+gfx": 1})


# --- memory ----------------------------------------------------------------------------

@pytest.mark.parametrize("key", MIG_MODELS)
def test_memory_below_card_and_increasing_with_size(key):
    m = CATALOG[key]
    by_size = {}
    for p in m.mig_profiles:
        assert 0 < p.memory_mib < m.memory_mib, p.name
        assert p.memory_mib % 64 == 0, p.name
        by_size.setdefault(p.size, set()).add(p.memory_mib)
    assert all(len(v) == 1 for v in by_size.values()), "profiles of one size share the same memory slices"
    sizes = sorted(by_size)
    mib = [by_size[s].pop() for s in sizes]
    assert mib == sorted(mib) and len(set(mib)) == len(mib), list(zip(sizes, mib))
    # the name's GB number is the rounded memory: never more than 25% off the usable figure
    for p in m.mig_profiles:
        named_gb = int(re.match(r"\dg\.(\d+)gb", p.name).group(1))
        assert 0.75 < p.memory_mib * 2 ** 20 / 1e9 / named_gb < 1.25, p.name


def test_memory_figures_from_the_reference():
    expected = {
        ("a100-40gb", "1g.5gb"): 4864, ("a100-40gb", "2g.10gb"): 9984, ("a100-40gb", "3g.20gb"): 20096,
        ("a100-40gb", "7g.40gb"): 40448,
        ("h100-80gb", "1g.10gb"): 9984, ("h100-80gb", "2g.20gb"): 20096, ("h100-80gb", "3g.40gb"): 40320,
        ("h100-80gb", "7g.80gb"): 81152, ("h100-80gb", "1g.20gb"): 20096,
        ("h100-94gb", "1g.12gb"): 10880, ("h100-94gb", "7g.94gb"): 95360,
        ("h100-96gb", "1g.12gb"): 11264, ("h100-96gb", "3g.48gb"): 47616,
        ("a30", "1g.6gb"): 5952, ("a30", "2g.12gb"): 11968, ("a30", "4g.24gb"): 24064,
        ("rtx-pro-6000", "1g.24gb"): 24192, ("rtx-pro-6000", "2g.48gb"): 48512, ("rtx-pro-6000", "4g.96gb"): 97280,
    }
    assert {k: _p(*k).memory_mib for k in expected} == expected
    assert CATALOG["h100-80gb"].memory_mib == 81559 and CATALOG["rtx-pro-6000"].memory_mib == 97887


def test_gib_conversion():
    assert gpu_catalog._gib(19.62) == 20096 and gpu_catalog._gib(4.75) == 4864
    assert gpu_catalog._gib(5.81) == 5952 and gpu_catalog._gib(23.62) == 24192


def test_estimates_are_marked_and_follow_the_rule():
    assert "estimated" in gpu_catalog.ESTIMATED
    estimated = set(gpu_catalog.ESTIMATED_PROFILES)
    for key in ("b200", "b300", "gh200-144gb", "a100-80gb", "gb200", "gb300"):
        for p in CATALOG[key].mig_profiles:
            assert (key, p.name) in estimated and p.source.startswith("estimated:"), (key, p.name)
    assert {n for k, n in estimated if k == "h100-96gb"} == {"7g.96gb"}
    for key in ("a100-40gb", "h100-80gb", "h100-94gb", "h200-141gb", "a30", "rtx-pro-6000"):
        assert not any(k == key for k, _name in estimated)
        assert not any("estimated" in p.source for p in CATALOG[key].mig_profiles)
    # the rule never promises more than either measured card has (the smaller fraction wins)
    for key in ("h100-80gb", "h200-141gb"):
        card = CATALOG[key]
        for p in card.mig_profiles:
            assert gpu_catalog._estimate(card.memory_mib, p.size) <= p.memory_mib
    # the H200 figures are the ones the hardware reported (tests/fixtures/nvidia/h200)
    assert [_p("h200-141gb", n).memory_mib for n in ("1g.18gb", "1g.35gb", "3g.71gb", "7g.141gb")] == [
        16384, 33280, 71424, 143360]


# --- names and lookups -----------------------------------------------------------------

@pytest.mark.parametrize("name,key", [
    ("h200", "h200-141gb"), ("H200-SXM", "h200-141gb"), ("h200 nvl", "h200-141gb"), ("NVIDIA H200", "h200-141gb"),
    ("nvidia_h200_nvl", "h200-141gb"), ("NVIDIA-H200", "h200-141gb"), ("  H200  ", "h200-141gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA A100 80GB PCIe", "a100-80gb"), ("a100_40gb", "a100-40gb"),
    ("NVIDIA A100-PCIE-40GB", "a100-40gb"), ("NVIDIA H100 80GB HBM3", "h100-80gb"), ("NVIDIA-H100-80GB-HBM3", "h100-80gb"),
    ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "h100-80gb"), ("H100 NVL", "h100-94gb"), ("NVIDIA GH200 480GB", "h100-96gb"),
    ("gh200-144gb", "gh200-144gb"), ("NVIDIA GH200 144G HBM3e", "gh200-144gb"), ("B200", "b200"),
    ("NVIDIA B300 SXM6 AC", "b300"), ("RTX PRO 6000", "rtx-pro-6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
    ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "rtx-pro-6000"),
    ("a30", "a30"), ("L4", "l4"), ("NVIDIA L40S", "l40s"), ("l40", "l40"), ("A10", "a10"), ("Tesla T4", "t4"),
    ("Tesla-T4", "t4"), ("t4", "t4"),
])
def test_lookup(name, key):
    assert lookup(name) is CATALOG[key]


@pytest.mark.parametrize("key", ALL_MODELS)
def test_lookup_round_trips_every_name(key):
    m = CATALOG[key]
    for name in (m.key, m.product_name, m.label_product, m.key.upper(), m.key.replace("-", "_")) + m.aliases:
        assert lookup(name) is m, name


@pytest.mark.parametrize("name", ["", "   ", "h100", "A100", "gh200", "nvidia h100", "v100", "rtx 6000 ada", None, 42])
def test_lookup_unknown_or_ambiguous(name):
    assert lookup(name) is None


@pytest.mark.parametrize("value", ["0x2335", "2335", "0x233510DE", "0x233510de", "233510DE", "0X2335", "10de:2335",
                                   "10DE:2335", 0x2335, 0x233510DE, " 0x2335 "])
def test_lookup_pci_forms(value):
    assert lookup_pci(value) is CATALOG["h200-141gb"]


@pytest.mark.parametrize("value", ["0xffff", "0x23351002", "1002:2335", "h200", "", "0x", "0x1233510DE",
                                   -1, True, None, 2.5])
def test_lookup_pci_misses(value):
    assert lookup_pci(value) is None


@pytest.mark.parametrize("key", ALL_MODELS)
def test_every_pci_id_round_trips(key):
    m = CATALOG[key]
    for pci, filt in zip(m.pci_device_ids, mig_config_device_filter(m)):
        assert lookup_pci(pci) is m and lookup_pci(int(pci, 16)) is m and lookup_pci(filt) is m
        assert re.fullmatch(r"0x[0-9A-F]{4}10DE", filt) and filt.lower() == pci + "10de"


def test_mig_config_device_filter_matches_mig_parted():
    # §1.14 all-balanced device filters for these models
    assert mig_config_device_filter(CATALOG["h200-141gb"]) == ["0x233510DE", "0x233B10DE"]
    assert set(mig_config_device_filter(CATALOG["a100-40gb"])) == {"0x20B010DE", "0x20B110DE", "0x20F110DE"}
    assert mig_config_device_filter(CATALOG["a30"]) == ["0x20B710DE"]
    assert mig_config_device_filter(CATALOG["b300"]) == ["0x318210DE"]
    assert mig_config_device_filter(CATALOG["gh200-144gb"]) == ["0x234810DE"]
    assert mig_config_device_filter(CATALOG["b200"]) == ["0x290110DE"]
    assert "0x2BB510DE" in mig_config_device_filter(CATALOG["rtx-pro-6000"])


def test_names_are_unique_across_models():
    seen = {}
    for m in CATALOG.values():
        for pci in m.pci_device_ids:
            assert seen.setdefault(pci, m.key) == m.key
    assert len({m.product_name for m in CATALOG.values()}) == len(CATALOG)


def test_suggest():
    assert suggest("h20")[0] == "h200-141gb"
    assert suggest("a100-40")[0] == "a100-40gb"
    assert set(suggest("h100")) == {"h100-80gb", "h100-94gb", "h100-96gb"}
    assert set(suggest("A100")) == {"a100-40gb", "a100-80gb"}
    assert suggest("rtx pro 6000 blackwel")[0] == "rtx-pro-6000"
    assert suggest("l40 s")[0] == "l40s"
    assert len(suggest("h100", n=1)) == 1 and len(suggest("a1", n=5)) <= 5
    assert suggest("qwertyuiop") == [] and suggest("") == []
    assert all(k in CATALOG for k in suggest("b2"))


# --- profiles --------------------------------------------------------------------------

def test_resource_name():
    assert _p("h100-80gb", "1g.10gb+me").resource_name == "nvidia.com/mig-1g.10gb.me"
    assert _p("h100-80gb", "3g.40gb").resource_name == "nvidia.com/mig-3g.40gb"
    assert _p("rtx-pro-6000", "1g.24gb+me.all").resource_name == "nvidia.com/mig-1g.24gb.me.all"
    assert _p("rtx-pro-6000", "2g.48gb-me").resource_name == "nvidia.com/mig-2g.48gb-me"
    for key, name in ALL_PROFILES:
        assert "+" not in _p(key, name).resource_name


def test_profile_lookup_and_error():
    h200 = CATALOG["h200-141gb"]
    assert h200.profile("1g.18gb+me") is h200.profile("1g.18gb.me") is h200.profile("nvidia.com/mig-1g.18gb.me")
    with pytest.raises(KeyError) as err:
        h200.profile("1g.10gb")
    message = str(err.value)
    assert "1g.10gb" in message and "h200-141gb" in message
    assert all(p.name in message for p in h200.mig_profiles)


def test_base_profiles():
    for key in MIG_MODELS:
        m = CATALOG[key]
        assert m.base_profiles and all(p.variant == "" for p in m.base_profiles)
        assert set(m.base_profiles) == {p for p in m.mig_profiles if not p.variant}
    assert [p.name for p in CATALOG["a30"].base_profiles] == ["1g.6gb", "2g.12gb", "4g.24gb"]
