# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_catalog: lookups, geometry invariants, memory figures and their sources."""

import dataclasses
import re

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import (
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

SEVEN_WAY_GEOMETRY = [  # MIG User Guide -lgipp for A100 (the same on the real H200): (compute, size, starts,
    # max) in the order 1g, 1g+me, 1g double, 2g, 3g, 4g, 7g
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
    assert all(s % p.size == 0 for s in p.starts)          # true of every published -lgipp listing
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
    # NVIDIA/mig-parted deployments/systemd/config-default.yaml, all-balanced
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


# Published readings of real cards: (model, profile, usable MiB, citation). -lgip prints GiB
# with two decimals of a multiple of 1/16 GiB (gpu_catalog._gib); GFD labels and NVML print MiB.
_GONVML = "NVIDIA/go-nvml commit b72647c, real NVML values of a DGX A100 40GB (pkg/nvml/mock/dgxa100)"
_FORUM = "forums.developer.nvidia.com/t/170488, -lgip on an A100 40GB"
_DRA = ("kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/reference/resourceslice-attributes.md, "
        "1g.5gb capacity 4864Mi on an A100-PCIE-40GB")
_AZURE = ("GFD labels and -lgip on an A100 80GB PCIe, driver 515.86.01, Azure NC24ads_A100_v4 (a public "
          "walkthrough of NVIDIA's 'MIG Support in Kubernetes')")
_GCP = ("cloud.google.com/compute/docs/gpus/create-gpu-vm-accelerator-optimized, -lgip on an H100 80GB, "
        "driver 525.125.06")
_GFD_DOCS = "NVIDIA/cloud-native-docs gpu-operator/manifests/output/mig-mixed-node-labels.json, driver 550.54.15"
_JBARROW = "jbarrow.ai/field_notes/nvidia-mig, -lgip on an H100 80GB"
_ONE = "OpenNebula/website content/product/cluster_configuration/hosts_and_clusters/vgpu.md, -lgip on an H100 NVL"
_GPUOP903 = "NVIDIA/gpu-operator#903, -lgip on an H100 NVL"
_PARTED101 = "NVIDIA/mig-parted#101 review comment, -lgip on an H100 NVL"
_GH200 = ("kf-cuanschutz/NVIDIA_Grace_Hopper_benchmarking_logs_ Daily_installs_loggings/"
          "Lessons_learned_from_the_slurm_MIG_installation.md, -lgip on a GH200 (H100 96GB)")
_PARTED139 = "NVIDIA/mig-parted#139, -lgip on a GH200 144G HBM3e"
_H200_HERE = "tests/fixtures/nvidia/h200/mig-lgip.txt, an H200 SXM, driver 580.159.04 (docs/gpu-facts.md)"
_PARTED120 = "NVIDIA/mig-parted#120, -lgip on an H200"
_PARTED166 = "NVIDIA/mig-parted#166, -lgip on a B200"
_PARTED187 = "NVIDIA/mig-parted#187, -lgip on a B200"
_PARTED227 = "NVIDIA/mig-parted#227, -lgip on a GB200"
_A30 = "Summer-Lo/Docker_configuration 000-MIG/README.md, -lgip on an A30"
_CUBECOS = "bigstack-oss/cubecos#312, -lgip on an RTX PRO 6000 Blackwell Server Edition"
_GKE564 = "GoogleCloudPlatform/container-engine-accelerators#564, -lgip on an RTX PRO 6000 Blackwell"
_g = gpu_catalog._gib

READINGS = [
    ("a100-40gb", "1g.5gb", 4864, _GONVML), ("a100-40gb", "1g.10gb", 9856, _GONVML),
    ("a100-40gb", "2g.10gb", 9856, _GONVML), ("a100-40gb", "3g.20gb", 19968, _GONVML),
    ("a100-40gb", "4g.20gb", 19968, _GONVML), ("a100-40gb", "7g.40gb", 40192, _GONVML),
    ("a100-40gb", "1g.5gb", _g(4.75), _FORUM), ("a100-40gb", "2g.10gb", _g(9.75), _FORUM),
    ("a100-40gb", "3g.20gb", _g(19.62), _FORUM), ("a100-40gb", "4g.20gb", _g(19.62), _FORUM),
    ("a100-40gb", "7g.40gb", _g(39.50), _FORUM), ("a100-40gb", "1g.5gb", 4864, _DRA),
    ("a100-80gb", "1g.10gb", 9728, _AZURE), ("a100-80gb", "2g.20gb", 19968, _AZURE),
    ("a100-80gb", "3g.40gb", 40192, _AZURE), ("a100-80gb", "4g.40gb", _g(39.25), _AZURE),
    ("a100-80gb", "7g.80gb", _g(79.00), _AZURE),
    ("h100-80gb", "1g.10gb", _g(9.62), _GCP), ("h100-80gb", "1g.20gb", _g(19.50), _GCP),
    ("h100-80gb", "2g.20gb", _g(19.50), _GCP), ("h100-80gb", "3g.40gb", _g(39.25), _GCP),
    ("h100-80gb", "1g.10gb", 9984, _GFD_DOCS), ("h100-80gb", "2g.20gb", 20096, _GFD_DOCS),
    ("h100-80gb", "3g.40gb", 40320, _GFD_DOCS),
    ("h100-80gb", "1g.10gb", _g(9.75), _JBARROW), ("h100-80gb", "1g.20gb", _g(19.62), _JBARROW),
    ("h100-80gb", "2g.20gb", _g(19.62), _JBARROW), ("h100-80gb", "3g.40gb", _g(39.50), _JBARROW),
    ("h100-80gb", "4g.40gb", _g(39.50), _JBARROW), ("h100-80gb", "7g.80gb", _g(79.25), _JBARROW),
    ("h100-94gb", "1g.12gb", _g(10.62), _ONE), ("h100-94gb", "1g.24gb", _g(21.50), _ONE),
    ("h100-94gb", "2g.24gb", _g(21.50), _ONE), ("h100-94gb", "3g.47gb", _g(46.12), _ONE),
    ("h100-94gb", "4g.47gb", _g(46.12), _ONE), ("h100-94gb", "7g.94gb", _g(92.62), _ONE),
    ("h100-94gb", "1g.12gb", _g(10.75), _GPUOP903), ("h100-94gb", "1g.24gb", _g(21.62), _GPUOP903),
    ("h100-94gb", "3g.47gb", _g(46.38), _PARTED101),
    ("h100-96gb", "1g.12gb", _g(11.00), _GH200), ("h100-96gb", "1g.24gb", _g(23.00), _GH200),
    ("h100-96gb", "2g.24gb", _g(23.00), _GH200), ("h100-96gb", "3g.48gb", _g(46.50), _GH200),
    ("h100-96gb", "4g.48gb", _g(46.50), _GH200), ("h100-96gb", "7g.96gb", _g(93.00), _GH200),
    ("gh200-144gb", "1g.18gb", _g(17.50), _PARTED139), ("gh200-144gb", "1g.36gb", _g(35.25), _PARTED139),
    ("gh200-144gb", "2g.36gb", _g(35.25), _PARTED139),
    ("h200-141gb", "1g.18gb", 16384, _H200_HERE), ("h200-141gb", "1g.35gb", 33280, _H200_HERE),
    ("h200-141gb", "2g.35gb", 33280, _H200_HERE), ("h200-141gb", "3g.71gb", 71424, _H200_HERE),
    ("h200-141gb", "4g.71gb", 71424, _H200_HERE), ("h200-141gb", "7g.141gb", 143360, _H200_HERE),
    ("h200-141gb", "1g.18gb", _g(16.00), _PARTED120), ("h200-141gb", "1g.35gb", _g(32.25), _PARTED120),
    ("h200-141gb", "2g.35gb", _g(32.25), _PARTED120), ("h200-141gb", "3g.71gb", _g(69.50), _PARTED120),
    ("h200-141gb", "4g.71gb", _g(69.50), _PARTED120), ("h200-141gb", "7g.141gb", _g(139.75), _PARTED120),
    ("b200", "1g.23gb", _g(22.00), _PARTED166), ("b200", "1g.45gb", _g(44.25), _PARTED166),
    ("b200", "2g.45gb", _g(44.25), _PARTED166),
    ("b200", "1g.23gb", _g(20.50), _PARTED187), ("b200", "1g.45gb", _g(44.25), _PARTED187),
    ("b200", "2g.45gb", _g(44.25), _PARTED187),
    ("gb200", "1g.23gb", _g(22.00), _PARTED227), ("gb200", "1g.47gb", _g(45.50), _PARTED227),
    ("gb200", "2g.47gb", _g(45.50), _PARTED227),
    ("a30", "1g.6gb", _g(5.81), _A30), ("a30", "2g.12gb", _g(11.69), _A30), ("a30", "4g.24gb", _g(23.50), _A30),
    ("rtx-pro-6000", "1g.24gb", _g(23.12), _CUBECOS), ("rtx-pro-6000", "2g.48gb", _g(46.50), _CUBECOS),
    ("rtx-pro-6000", "1g.24gb", _g(23.62), _GKE564),
]


@pytest.mark.parametrize("key,name,mib,source", READINGS)
def test_no_catalogue_figure_exceeds_a_published_reading(key, name, mib, source):
    assert _p(key, name).memory_mib <= mib, source


def _lowest(key, size):
    got = [mib for k, n, mib, _src in READINGS if k == key and _p(k, n).size == size]
    return min(got) if got else None


@pytest.mark.parametrize("key", MIG_MODELS)
def test_measured_figures_are_the_lowest_reading_and_estimates_stay_below(key):
    for p in CATALOG[key].mig_profiles:
        lowest = _lowest(key, p.size)
        if p.source.startswith("estimated"):
            assert lowest is None or p.memory_mib <= lowest, p.name
        else:
            assert p.memory_mib == lowest, (p.name, p.memory_mib, lowest)


def test_the_a100_80gb_example_of_the_issue():
    # a 39.4 GiB service does not fit a 3g.40gb (39.25 GiB on real cards; the old estimate said 39.50),
    # and a 7g.80gb is 79.00 GiB, not the 79.56 GiB the old estimate promised
    assert _p("a100-80gb", "3g.40gb").memory_mib == 40192 < 39.4 * 1024
    assert _p("a100-80gb", "7g.80gb").memory_mib == 80896


def test_gib_conversion():
    assert gpu_catalog._gib(19.62) == 20096 and gpu_catalog._gib(4.75) == 4864
    assert gpu_catalog._gib(5.81) == 5952 and gpu_catalog._gib(23.62) == 24192


def test_estimates_are_marked_and_follow_the_rules():
    assert "estimated" in gpu_catalog.ESTIMATED
    estimated = set(gpu_catalog.ESTIMATED_PROFILES)
    for p in (q for k in MIG_MODELS for q in CATALOG[k].mig_profiles):
        assert p.source.startswith("estimated:") == ("estimated" in p.source)
    for key in ("b300", "gb300"):
        for p in CATALOG[key].mig_profiles:
            assert (key, p.name) in estimated and p.source.startswith("estimated:"), (key, p.name)
    for key in ("gh200-144gb", "b200", "gb200"):
        assert {n for k, n in estimated if k == key} == {p.name for p in CATALOG[key].mig_profiles if p.size >= 4}
    assert {(k, n) for k, n in estimated if k in ("a30", "rtx-pro-6000")} == {
        ("a30", "4g.24gb"), ("rtx-pro-6000", "4g.96gb"), ("rtx-pro-6000", "4g.96gb+gfx")}
    for key in ("a100-40gb", "a100-80gb", "h100-80gb", "h100-94gb", "h100-96gb", "h200-141gb"):
        assert not any(k == key for k, _name in estimated)
        assert not any("estimated" in p.source for p in CATALOG[key].mig_profiles)


def test_the_seven_way_rule_is_below_every_measured_card():
    # applied to a measured card, the rule gives no more than the lowest reading of that card
    for key in MIG_MODELS:
        card = CATALOG[key]
        if card.mig_grid != 8:
            continue
        for size in (1, 2, 4, 8):
            lowest = _lowest(key, size)
            if lowest is not None:
                assert gpu_catalog._estimate(card.memory_mib, size) <= lowest, (key, size)


def test_the_doubling_rule_holds_on_every_published_listing():
    # usable(2n) >= 2 x usable(n) on every listing with both sizes, so 2 x usable(n) is a safe estimate
    by_listing = {}
    for key, name, mib, source in READINGS:
        by_listing.setdefault((key, source), {})[_p(key, name).size] = mib
    checked = 0
    for (key, source), sizes in by_listing.items():
        for size, mib in sizes.items():
            if 2 * size in sizes:
                assert sizes[2 * size] >= 2 * mib, (key, source, size)
                checked += 1
    assert checked >= 20
    assert _p("a30", "4g.24gb").memory_mib == 2 * _p("a30", "2g.12gb").memory_mib
    assert _p("rtx-pro-6000", "4g.96gb").memory_mib == 2 * _p("rtx-pro-6000", "2g.48gb").memory_mib


def test_h200_figures_are_the_lower_of_the_two_h200_listings():
    # the H200 SXM read here (driver 580.159.04) reports 256 MiB more on 2-, 4- and 8-slice
    # profiles than the H200 listing in NVIDIA/mig-parted#120; the catalogue takes the lower
    assert [_p("h200-141gb", n).memory_mib for n in ("1g.18gb", "1g.35gb", "3g.71gb", "7g.141gb")] == [
        16384, 33024, 71168, 143104]


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
    # NVIDIA/mig-parted deployments/systemd/config-default.yaml all-balanced device filters
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


@pytest.mark.parametrize("key", MIG_MODELS)
def test_of_profiles_with_one_memory_the_fewest_compute_one_places_wherever_another_does(key):
    # The MIG planner gives a replica that only needs memory the profile of its memory with the
    # fewest compute slices, in place of the one the solver's pattern had (mig_planner's
    # _canonical_profiles). That stays a valid layout only if, per memory, that profile has the
    # same size, every start of the others, and a max count of at least its starts (starts are
    # multiples of the size, so no more slices of it than starts ever fit).
    m = CATALOG[key]
    by_memory = {}
    for p in m.base_profiles:
        by_memory.setdefault(p.memory_mib, []).append(p)
    for profiles in by_memory.values():
        fewest = min(profiles, key=lambda p: p.compute_slices)
        assert [p.compute_slices for p in profiles].count(fewest.compute_slices) == 1
        assert fewest.max_count >= len(fewest.starts)
        for p in profiles:
            assert p.size == fewest.size and set(p.starts) <= set(fewest.starts), (key, p.name, fewest.name)
