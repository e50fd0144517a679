# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU catalogue: the NVIDIA cards the planners know, with their MIG geometry.

Pure Python (standard library only, no Ansible import).

A MIG profile name or an nvidia-smi profile ID means different things on different
models: ``1g.35gb`` is the double-memory 1g (placement size 2, max 4) on H200 but the
single-memory 1g (size 1, max 7) on GB300, and profile ID 14 is ``1g.6gb`` on A30 but a
``2g`` on A100/H100. Placement grids differ too (8 units on the 7-way family, 4 on A30,
12 on RTX PRO 6000). So everything here is keyed by GPU model (``CATALOG[key]``, or
``lookup``/``lookup_pci``), never by profile name or profile ID alone.

Every figure carries its source in ``source``. Usable memory per MIG profile is the lowest
value any published reading of a real card gave (``nvidia-smi mig -lgip``, NVML
``memorySizeMB`` or the GPU feature discovery label ``nvidia.com/mig-<profile>.memory``):
the same profile reports less on some drivers than on others, and a figure above what a
card reports would put a model on a slice that cannot hold it. Where no reading is
published, the value is estimated by the rules in ``ESTIMATED`` (never above any reading),
and the profile's source starts with ``"estimated:"``. tests/unit/test_gpu_catalog.py holds
every reading with its citation and checks that no figure here exceeds one.
"""

from __future__ import absolute_import, annotations, division, print_function

import difflib
import re
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils.names import MIG_RESOURCE_PREFIX

__metaclass__ = type

NVIDIA_VENDOR_ID = 0x10DE

# Sources used by several entries, named once.
_MIG_GUIDE = "NVIDIA MIG User Guide, Supported MIG Profiles (docs.nvidia.com/datacenter/tesla/mig-user-guide)"
_MIG_PARTED = "NVIDIA/mig-parted deployments/systemd/config-default.yaml"
_SRC_PCI = ("PCI IDs and NVML names: NVIDIA open-gpu-kernel-modules README 595.45.04 "
            "'Compatible GPUs' table; pci.ids (pciutils/pciids c1c1254, 2026-08-22)")
_SRC_SMI = "[OBSERVED: memory.total in third-party nvidia-smi output]"
_SRC_LGIPP_A100 = "placements: MIG User Guide 'List GPU Instance Profiles' -lgipp for A100 [CONFIRMED]"
_SRC_LGIPP_H100 = ("placements: -lgipp identical to the A100 one on H100 80GB/NVL (Colfax Research MIG "
                   "article) [OBSERVED]")
_SRC_LGIPP_INF = "placements: the A100 -lgipp [INFERRED: same fractions and max counts; no -lgipp seen]"
_SRC_ALL_BALANCED = "%s all-balanced device-filter" % _MIG_PARTED
# Read on a real H200 SXM (0x2335), driver 580.159.04, MIG disabled: nvidia-smi mig -lgip/-lgipp
# and NVML agree (tests/fixtures/nvidia/h200/, docs/gpu-facts.md).
_SRC_H200_MEASURED = "NVML memorySizeMB on a real H200 SXM, driver 580.159.04 (docs/gpu-facts.md)"
_SRC_LGIPP_H200 = "placements: -lgipp on a real H200 SXM, the same as the A100 one (docs/gpu-facts.md)"


def _gib(value: float) -> int:
    """MiB from a two-decimal GiB figure as ``nvidia-smi mig -lgip`` prints it.

    The driver reports multiples of 1/16 GiB (64 MiB) and nvidia-smi rounds them to two
    decimals, so 19.62 means 19.625 GiB = 20096 MiB (what GFD labels the same profile).
    """
    return int(round(value * 1024 / 64)) * 64


# --- published readings ------------------------------------------------------------------

# The lowest published usable memory per placement size (grid units) of each model, with
# its source. tests/unit/test_gpu_catalog.py lists every reading behind these minima.
_R_A100_40 = "go-nvml commit b72647c, real NVML values of a DGX A100 40GB (pkg/nvml/mock/dgxa100/dgxa100.go)"
_R_A100_80 = ("GFD labels and -lgip on an A100 80GB PCIe, driver 515.86.01 (Azure NC24ads_A100_v4); "
              "3g below 40 GiB also in NVIDIA/mig-parted#31, 7g at most 79 GiB in NVIDIA/gpu-operator#351")
_R_H100_80 = ("-lgip on an H100 80GB, driver 525.125.06 (Google Cloud docs, 'Create an accelerator-optimized "
              "VM', Multi-Instance GPUs)")
_R_H100_80_7G = "-lgip 7g.80gb 79.25 GiB on an H100 80GB (jbarrow.ai/field_notes/nvidia-mig)"
_R_H100_94 = ("-lgip on an H100 NVL (OpenNebula/website content/product/cluster_configuration/"
              "hosts_and_clusters/vgpu.md)")
_R_H100_96 = ("-lgip on a GH200 (kf-cuanschutz/NVIDIA_Grace_Hopper_benchmarking_logs_ "
              "Daily_installs_loggings/Lessons_learned_from_the_slurm_MIG_installation.md)")
_R_GH200_144 = "-lgip on a GH200 144G HBM3e (NVIDIA/mig-parted#139)"
_R_H200 = "-lgip on an H200 (NVIDIA/mig-parted#120); the H200 SXM read here reports 256 MiB more"
_R_B200 = "-lgip on a B200 (NVIDIA/mig-parted#187: 1g 20.50 GiB; #166: 22.00 GiB)"
_R_GB200 = "-lgip on a GB200 (NVIDIA/mig-parted#227)"
_R_A30 = "-lgip on an A30 (Summer-Lo/Docker_configuration 000-MIG/README.md)"
_R_RTX = "-lgip on an RTX PRO 6000 Blackwell Server Edition (bigstack-oss/cubecos#312)"

_MEASURED: dict[str, dict[int, tuple[int, str]]] = {
    "a100-40gb": {1: (4864, _R_A100_40), 2: (9856, _R_A100_40), 4: (19968, _R_A100_40), 8: (40192, _R_A100_40)},
    "a100-80gb": {1: (9728, _R_A100_80), 2: (19968, _R_A100_80), 4: (40192, _R_A100_80), 8: (_gib(79.00), _R_A100_80)},
    "h100-80gb": {1: (_gib(9.62), _R_H100_80), 2: (_gib(19.50), _R_H100_80), 4: (_gib(39.25), _R_H100_80),
                  8: (_gib(79.25), _R_H100_80_7G)},
    "h100-94gb": {1: (_gib(10.62), _R_H100_94), 2: (_gib(21.50), _R_H100_94), 4: (_gib(46.12), _R_H100_94),
                  8: (_gib(92.62), _R_H100_94)},
    "h100-96gb": {1: (_gib(11.00), _R_H100_96), 2: (_gib(23.00), _R_H100_96), 4: (_gib(46.50), _R_H100_96),
                  8: (_gib(93.00), _R_H100_96)},
    "gh200-144gb": {1: (_gib(17.50), _R_GH200_144), 2: (_gib(35.25), _R_GH200_144)},
    "h200-141gb": {1: (16384, _SRC_H200_MEASURED + " and " + _R_H200), 2: (_gib(32.25), _R_H200),
                   4: (_gib(69.50), _R_H200), 8: (_gib(139.75), _R_H200)},
    "b200": {1: (_gib(20.50), _R_B200), 2: (_gib(44.25), _R_B200)},
    "gb200": {1: (_gib(22.00), _R_GB200), 2: (_gib(45.50), _R_GB200)},
    "a30": {1: (_gib(5.81), _R_A30), 2: (_gib(11.69), _R_A30)},
    "rtx-pro-6000": {3: (_gib(23.12), _R_RTX), 6: (_gib(46.50), _R_RTX)},
}

# Card memory (NVML memory.total, MiB) of the 7-way models above, for the estimate rule.
_SEVEN_WAY_CARD_MIB = {"a100-40gb": 40960, "a100-80gb": 81920, "h100-80gb": 81559, "h100-94gb": 95830,
                       "h100-96gb": 97871, "gh200-144gb": 146831, "h200-141gb": 143771, "b200": 183359,
                       "gb200": 189471}


# --- the estimate rules ------------------------------------------------------------------

ESTIMATED = (
    "estimated, where no reading of the model is published, by one of two rules that give no more "
    "than any published reading. 7-way models: usable MiB = card memory_mib x the smallest "
    "usable/card ratio for the same placement size among all 7-way cards with a published reading "
    "(gpu_catalog._MEASURED), rounded down to 64 MiB; applied to any measured card the rule gives at "
    "most its reading, since that card's ratio is one of those compared. Other grids (one model "
    "each): usable MiB = 2 x the usable MiB of the profile with half the placement size on the same "
    "card, because every published listing has usable(2n) >= 2 x usable(n). Used for the 3g/4g/7g "
    "profiles of GH200-144GB, B200 and GB200, every profile of B300 and GB300, A30 4g.24gb and RTX PRO "
    "6000 4g.96gb. "
    "Replace with -lgip / GFD nvidia.com/mig-<profile>.memory values from the real card when known."
)

# (card MiB, {placement size: lowest reading}) of every 7-way card with a published reading.
_BASIS = tuple((_SEVEN_WAY_CARD_MIB[key], {size: mib for size, (mib, _src) in _MEASURED[key].items()})
               for key in sorted(_SEVEN_WAY_CARD_MIB))


def _estimate(card_mib: int, size: int) -> int:
    """The 7-way rule: the smallest usable/card ratio of ``size`` over the measured cards."""
    return min(card_mib * by_size[size] // basis_card
               for basis_card, by_size in _BASIS if size in by_size) // 64 * 64


# --- data types --------------------------------------------------------------------------

_PROFILE_NAME = re.compile(r"^(?P<g>[1-9])g\.(?P<gb>[0-9]+)gb(?P<variant>(?:\+me\.all|\+me|\+gfx|-me)?)$")


@dataclass(frozen=True)
class MigProfile:
    name: str                # "1g.18gb", "1g.18gb+me", "1g.24gb+gfx"
    compute_slices: int      # G in "Ng.*"
    memory_mib: int          # usable memory as the driver reports it (-lgip / GFD), not the name
    size: int                # placement size in grid units, from -lgipp "{starts}:size"
    starts: tuple[int, ...]  # valid start slots
    max_count: int
    media_extensions: bool   # "+me" or "+me.all" (at most one +me profile per GPU)
    variant: str             # "" for base profiles, else "+me", "+gfx", "+me.all", "-me"
    source: str              # citation for this profile's figures

    @property
    def resource_name(self) -> str:
        """Device plugin resource under the mixed strategy: '+' becomes '.' (NVIDIA/k8s-device-plugin
        README, "MIG strategies")."""
        return MIG_RESOURCE_PREFIX + self.name.replace("+", ".")


@dataclass(frozen=True)
class GpuModel:
    key: str
    product_name: str                      # NVML name
    label_product: str                     # GFD nvidia.com/gpu.product (spaces -> '-')
    aliases: tuple[str, ...]               # lower-case names people write
    pci_device_ids: tuple[str, ...]        # "0x2335" (device id only, lower-case hex)
    memory_mib: int                        # whole card, as NVML reports it
    architecture: str
    mig_grid: int                          # placement units; 0 = no MIG
    mig_profiles: tuple[MigProfile, ...]
    source: str

    @property
    def mig_capable(self) -> bool:
        return self.mig_grid > 0 and bool(self.mig_profiles)

    @property
    def base_profiles(self) -> tuple[MigProfile, ...]:
        return tuple(p for p in self.mig_profiles if not p.variant)

    def profile(self, name: str) -> MigProfile:
        """The profile called ``name`` on this model.

        Also accepts the '.' spelling of the mixed-strategy resource ("1g.10gb.me") and the
        full resource name ("nvidia.com/mig-1g.10gb.me"). KeyError lists the allowed names.
        """
        for p in self.mig_profiles:      # the exact name: the planners' hot path
            if p.name == name:
                return p
        wanted = str(name).strip().lower()
        if wanted.startswith(MIG_RESOURCE_PREFIX):
            wanted = wanted[len(MIG_RESOURCE_PREFIX):]
        for p in self.mig_profiles:
            if wanted in (p.name, p.name.replace("+", ".")):
                return p
        allowed = ", ".join(p.name for p in self.mig_profiles)
        if not allowed:
            raise KeyError("%r: %s (%s) has no MIG profiles" % (name, self.key, self.product_name))
        raise KeyError("%r is not a MIG profile of %s (%s); allowed: %s"
                       % (name, self.key, self.product_name, allowed))


def fewest_compute(model: GpuModel, memory_mib: int, allowed=None) -> MigProfile:
    """The base profile of ``memory_mib`` with the fewest compute slices (among ``allowed``
    names, if given): what a replica that only needs memory gets (mig_planner)."""
    return min((p for p in model.base_profiles if p.memory_mib == memory_mib and (allowed is None or p.name in allowed)),
               key=lambda p: p.compute_slices)


def profile_for_memory(model: GpuModel, need_mib: int, allowed=None) -> MigProfile | None:
    """The profile a replica needing ``need_mib`` gets on its own: the least memory that holds
    it, then the fewest compute slices; None if no profile holds it."""
    fits = sorted({p.memory_mib for p in model.base_profiles
                   if p.memory_mib >= need_mib and (allowed is None or p.name in allowed)})
    return fewest_compute(model, fits[0], allowed) if fits else None


# --- profile builders --------------------------------------------------------------------

def _profile(name: str, size: int, starts: tuple[int, ...], max_count: int, memory_mib: int,
             source: str) -> MigProfile:
    m = _PROFILE_NAME.match(name)
    if m is None:
        raise ValueError("bad MIG profile name %r" % name)
    variant = m.group("variant")
    return MigProfile(name=name, compute_slices=int(m.group("g")), memory_mib=memory_mib, size=size,
                      starts=starts, max_count=max_count, media_extensions=variant in ("+me", "+me.all"),
                      variant=variant, source=source)


# The 7-compute / 8-memory-slice family (placements as MIG User Guide -lgipp for A100):
# (name template, size, starts, max count).
# a, b, c, d are the GB numbers in the names of the 1-, 2-, 4- and 8-slice profiles.
_SEVEN_WAY = (
    ("1g.{a}gb", 1, (0, 1, 2, 3, 4, 5, 6), 7),
    ("1g.{a}gb+me", 1, (0, 1, 2, 3, 4, 5, 6), 1),
    ("1g.{b}gb", 2, (0, 2, 4, 6), 4),        # the double-memory 1g
    ("2g.{b}gb", 2, (0, 2, 4), 3),
    ("3g.{c}gb", 4, (0, 4), 2),
    ("4g.{c}gb", 4, (0,), 1),
    ("7g.{d}gb", 8, (0,), 1),
)


def _seven_way(gb: tuple[int, int, int, int], card_mib: int, names_src: str, placement_src: str,
               memory: dict[int, tuple[int, str]] | None = None) -> tuple[MigProfile, ...]:
    """The seven profiles of one 7-way model.

    ``gb``: the GB numbers in the names (e.g. (18, 35, 71, 141) for H200). ``memory``: the
    lowest published usable MiB and its source per placement size (1, 2, 4, 8), from
    ``_MEASURED``; a size left out is estimated (``ESTIMATED``). Profiles of one size share the
    same memory slices, hence one figure.
    """
    memory = memory or {}
    a, b, c, d = gb
    out = []
    for template, size, starts, max_count in _SEVEN_WAY:
        if size in memory:
            mib, mem_src = memory[size]
            source = "memory_mib %s; names/max %s; %s" % (mem_src, names_src, placement_src)
        else:
            mib = _estimate(card_mib, size)
            source = "estimated: memory_mib by the rule in gpu_catalog.ESTIMATED; names/max %s; %s" % (
                names_src, placement_src)
        out.append(_profile(template.format(a=a, b=b, c=c, d=d), size, starts, max_count, mib, source))
    return tuple(out)


def _gridded(classes: dict[int, tuple[tuple[int, ...], int, str]],
             rows: tuple[tuple[str, int, int], ...], names_src: str, placement_src: str) -> tuple[MigProfile, ...]:
    """Profiles of a non-7-way grid. ``classes``: size -> (starts, usable MiB, memory source),
    where a memory source starting with "estimated:" marks an estimate; ``rows``: (name, size,
    max count)."""
    out = []
    for name, size, max_count in rows:
        starts, mib, mem_src = classes[size]
        if mem_src.startswith("estimated:"):
            source = "%s; names/max %s; %s" % (mem_src, names_src, placement_src)
        else:
            source = "memory_mib %s; names/max %s; %s" % (mem_src, names_src, placement_src)
        out.append(_profile(name, size, starts, max_count, mib, source))
    return tuple(out)


def _measured(key: str, size: int) -> tuple[int, str]:
    mib, src = _MEASURED[key][size]
    return mib, "%s MiB, lowest published: %s" % (mib, src)


def _doubled(key: str, size: int) -> tuple[int, str]:
    """The other-grid rule of ``ESTIMATED``: twice the profile of half the size."""
    mib = 2 * _MEASURED[key][size // 2][0]
    return mib, "estimated: memory_mib %s = 2 x the %d-unit profile, by the rule in gpu_catalog.ESTIMATED" % (
        mib, size // 2)


def _seven_way_memory(key: str) -> dict[int, tuple[int, str]]:
    return {size: _measured(key, size) for size in _MEASURED.get(key, {})}


def _model(key: str, product_name: str, aliases: tuple[str, ...], pci: tuple[int, ...], memory_mib: int,
           architecture: str, source: str, profiles: tuple[MigProfile, ...] = (), grid: int = 0) -> GpuModel:
    return GpuModel(key=key, product_name=product_name, label_product=product_name.replace(" ", "-"),
                    aliases=tuple(a.lower() for a in aliases), pci_device_ids=tuple("0x%04x" % p for p in pci),
                    memory_mib=memory_mib, architecture=architecture, mig_grid=grid if profiles else 0,
                    mig_profiles=profiles, source=source)


# --- the models --------------------------------------------------------------------------

_A30_MIB, _RTX6000_MIB = 24576, 97887

_MODELS = (
    # ---- 7-way family (8-unit grid) ----
    _model("a100-40gb", "NVIDIA A100-SXM4-40GB",
           ("a100-40gb", "a100 40gb", "a100-40g", "a100-sxm4-40gb", "a100 sxm4 40gb", "a100-pcie-40gb",
            "a100 pcie 40gb", "nvidia a100-pcie-40gb"),
           (0x20B0, 0x20B1, 0x20F1), 40960, "Ampere",
           "%s (A100-40GB); PCI 0x20b0/0x20b1/0x20f1 %s (A800 0x20f6 left out); %s; memory_mib 40960 %s"
           % (_MIG_GUIDE, _SRC_ALL_BALANCED, _SRC_PCI, _SRC_SMI),
           _seven_way((5, 10, 20, 40), 40960, "%s (1g.10gb needs R525+)" % _MIG_GUIDE, _SRC_LGIPP_A100,
                      _seven_way_memory("a100-40gb")), grid=8),
    _model("a100-80gb", "NVIDIA A100-SXM4-80GB",
           ("a100-80gb", "a100 80gb", "a100-80g", "a100-sxm4-80gb", "a100 sxm4 80gb", "a100 80gb pcie",
            "a100-pcie-80gb", "nvidia a100 80gb pcie"),
           (0x20B2, 0x20B5), 81920, "Ampere",
           "%s (A100-80GB names scale from the 40GB table); %s all-1g.10gb=7 for 0x20b2/0x20b5; A800 "
           "0x20f3/0x20f5 left out; %s; memory_mib 81920 %s" % (_MIG_GUIDE, _MIG_PARTED, _SRC_PCI, _SRC_SMI),
           _seven_way((10, 20, 40, 80), 81920, _MIG_GUIDE, _SRC_LGIPP_A100, _seven_way_memory("a100-80gb")),
           grid=8),
    _model("h100-80gb", "NVIDIA H100 80GB HBM3",
           ("h100-80gb", "h100 80gb", "h100-sxm", "h100 sxm", "h100-sxm5", "h100 sxm5 80gb", "h100-80gb-hbm3",
            "h100 pcie", "h100-pcie", "nvidia h100 pcie", "h100-pcie-80gb"),
           (0x2330, 0x2331), 81559, "Hopper",
           "%s (H100-80GB); nvidia.com/gpu.memory 81559 in NVIDIA/cloud-native-docs "
           "gpu-operator/manifests/output/mig-mixed-node-labels.json; H800 0x2322/0x2324 left out; %s"
           % (_MIG_GUIDE, _SRC_PCI),
           _seven_way((10, 20, 40, 80), 81559, _MIG_GUIDE, _SRC_LGIPP_H100, _seven_way_memory("h100-80gb")),
           grid=8),
    _model("h100-94gb", "NVIDIA H100 NVL",
           ("h100-94gb", "h100 94gb", "h100 nvl", "h100-nvl", "h100-nvl-94gb", "h100 sxm5 94gb", "h100l 94gb"),
           (0x2321, 0x2339), 95830, "Hopper",
           "%s (H100-94GB); PCI 0x2321 %s, 0x2339 ('NVIDIA H100', SXM5 94GB) from the README/pci.ids only; "
           "H800 NVL 0x233a left out; %s; memory_mib 95830 %s" % (_MIG_GUIDE, _SRC_ALL_BALANCED, _SRC_PCI, _SRC_SMI),
           _seven_way((12, 24, 47, 94), 95830, _MIG_GUIDE, _SRC_LGIPP_H100, _seven_way_memory("h100-94gb")),
           grid=8),
    _model("h100-96gb", "NVIDIA GH200 480GB",
           ("h100-96gb", "h100 96gb", "gh200-96gb", "gh200 96gb", "gh200-480gb", "gh200 480gb", "gh200 120gb",
            "nvidia gh200 120gb", "gh200-h100-96gb"),
           (0x2342, 0x233D), 97871, "Hopper",
           "%s (H100 96GB on GH200); PCI 0x2342/0x233d %s (PG506 0x20b6 and H20 0x2329 left out); NVML "
           "name of 0x2342 is 'NVIDIA GH200 480GB' or '... 120GB' by board; %s; memory_mib 97871 %s"
           % (_MIG_GUIDE, _SRC_ALL_BALANCED, _SRC_PCI, _SRC_SMI),
           _seven_way((12, 24, 48, 96), 97871, _MIG_GUIDE, _SRC_LGIPP_INF, _seven_way_memory("h100-96gb")),
           grid=8),
    _model("gh200-144gb", "NVIDIA GH200 144G HBM3e",
           ("gh200-144gb", "gh200 144gb", "gh200 144g", "gh200 144g hbm3e", "gh200-144g-hbm3e"),
           (0x2348,), 146831, "Hopper",
           "%s (NVIDIA/mig-parted commit 8cdf60f9; not in the MIG User Guide tables); %s; memory_mib 146831 %s"
           % (_MIG_PARTED, _SRC_PCI, _SRC_SMI),
           _seven_way((18, 36, 72, 144), 146831, _MIG_PARTED, _SRC_LGIPP_INF, _seven_way_memory("gh200-144gb")),
           grid=8),
    _model("h200-141gb", "NVIDIA H200",
           ("h200", "h200-141gb", "h200 141gb", "h200-sxm", "h200 sxm", "h200 sxm 141gb", "h200-sxm5",
            "h200 nvl", "h200-nvl", "nvidia h200", "nvidia h200 nvl"),
           (0x2335, 0x233B), 143771, "Hopper",
           "%s (H200 SXM 0x2335, H200 NVL 0x233b); %s; memory_mib 143771 %s" % (_MIG_GUIDE, _SRC_PCI, _SRC_SMI),
           _seven_way((18, 35, 71, 141), 143771, _MIG_GUIDE, _SRC_LGIPP_H200, _seven_way_memory("h200-141gb")),
           grid=8),
    _model("b200", "NVIDIA B200",
           ("b200", "b200-180gb", "b200 180gb", "nvidia b200", "hgx b200", "dgx b200"),
           (0x2901,), 183359, "Blackwell",
           "%s (B200; driver >= R570); HGX B200 168GB 0x2909 left out; %s; memory_mib 183359 %s"
           % (_MIG_GUIDE, _SRC_PCI, _SRC_SMI),
           _seven_way((23, 45, 90, 180), 183359, _MIG_GUIDE, _SRC_LGIPP_INF, _seven_way_memory("b200")), grid=8),
    _model("b300", "NVIDIA B300 SXM6 AC",
           ("b300", "b300-288gb", "b300 288gb", "b300 sxm6 ac", "b300-sxm6-ac", "nvidia b300", "hgx b300",
            "dgx b300"),
           (0x3182,), 275040, "Blackwell",
           "%s (NVIDIA/mig-parted commit 47c56d96; aws/sagemaker-hyperpod-cli PR #403; not in the MIG User "
           "Guide tables [UNCONFIRMED by NVIDIA docs]); %s; memory_mib 275040 %s" % (_MIG_PARTED, _SRC_PCI, _SRC_SMI),
           _seven_way((34, 67, 135, 269), 275040, _MIG_PARTED, _SRC_LGIPP_INF), grid=8),
    # Not requested, added so that "same name, other geometry" (1g.35gb on GB300) is in the data.
    _model("gb200", "NVIDIA GB200",
           ("gb200", "gb200-186gb", "gb200 nvl72", "hgx gb200", "nvidia gb200"),
           (0x2941,), 189471, "Blackwell",
           "%s (GB200; not in the MIG User Guide tables); %s; memory_mib 189471 %s" % (_MIG_PARTED, _SRC_PCI, _SRC_SMI),
           _seven_way((23, 47, 93, 186), 189471, _MIG_PARTED, _SRC_LGIPP_INF, _seven_way_memory("gb200")), grid=8),
    _model("gb300", "NVIDIA GB300",
           ("gb300", "gb300-278gb", "gb300 nvl72", "nvidia gb300"),
           (0x31C2,), 284208, "Blackwell",
           "%s (all-1g.35gb gives 7 on 0x31C2, 4 on the H200 0x2335; not in the MIG User Guide tables); "
           "0x31c3 (also 'NVIDIA GB300' in the README, not in mig-parted) left out; %s; memory_mib 284208 %s"
           % (_MIG_PARTED, _SRC_PCI, _SRC_SMI),
           _seven_way((35, 70, 139, 278), 284208, _MIG_PARTED, _SRC_LGIPP_INF), grid=8),

    # ---- A30: 4-unit grid ----
    _model("a30", "NVIDIA A30", ("a30", "a30-24gb", "a30 24gb", "nvidia a30"), (0x20B7,), _A30_MIB, "Ampere",
           "%s (A30-24GB table; -lgipp and -lgip observed in two posts); %s; memory_mib 24576 %s"
           % (_MIG_GUIDE, _SRC_PCI, _SRC_SMI),
           _gridded({1: ((0, 1, 2, 3),) + _measured("a30", 1),
                     2: ((0, 2),) + _measured("a30", 2),
                     4: ((0,),) + _doubled("a30", 4)},
                    (("1g.6gb", 1, 4), ("1g.6gb+me", 1, 1), ("2g.12gb", 2, 2), ("2g.12gb+me", 2, 1),
                     ("4g.24gb", 4, 1)),
                    "%s (1g.6gb+me R470+, 2g.12gb+me R525+)" % _MIG_GUIDE,
                    "placements: -lgipp {0,1,2,3}:1, {0,2}:2, {0}:4 on an A30 (%s) [OBSERVED]" % _R_A30), grid=4),

    # ---- RTX PRO 6000 Blackwell: 12-unit grid ----
    _model("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
           ("rtx-pro-6000", "rtx pro 6000", "rtx pro 6000 blackwell", "rtx pro 6000 server",
            "rtx pro 6000 blackwell server edition", "rtx pro 6000 blackwell workstation edition",
            "rtx pro 6000 workstation", "rtx pro 6000 blackwell max-q workstation edition", "rtx pro 6000 max-q",
            "nvidia rtx pro 6000 blackwell workstation edition",
            "nvidia rtx pro 6000 blackwell max-q workstation edition"),
           (0x2BB5, 0x2BB1, 0x2BB4), _RTX6000_MIB, "Blackwell",
           "%s (RTX PRO 6000 Blackwell, 'Number of Instances'); Server 0x2bb5 in %s; Workstation 0x2bb1 and "
           "Max-Q 0x2bb4 are in the README/pci.ids and need compute display mode first; %s; memory_mib "
           "97887 [OBSERVED]" % (_MIG_GUIDE, _SRC_ALL_BALANCED, _SRC_PCI),
           _gridded({3: ((0, 3, 6, 9),) + _measured("rtx-pro-6000", 3),
                     6: ((0, 6),) + _measured("rtx-pro-6000", 6),
                     12: ((0,),) + _doubled("rtx-pro-6000", 12)},
                    (("1g.24gb", 3, 4), ("1g.24gb+me", 3, 1), ("1g.24gb+gfx", 3, 4), ("1g.24gb+me.all", 3, 1),
                     ("1g.24gb-me", 3, 4), ("2g.48gb", 6, 2), ("2g.48gb+gfx", 6, 2), ("2g.48gb+me.all", 6, 1),
                     ("2g.48gb-me", 6, 2), ("4g.96gb", 12, 1), ("4g.96gb+gfx", 12, 1)),
                    "%s (driver >= R575)" % _MIG_GUIDE,
                    "placements: -lgipp {0,3,6,9}:3, {0,6}:6, {0}:12 on an RTX PRO 6000 Blackwell Server "
                    "Edition [OBSERVED, one third-party post]"), grid=12),

    # ---- no MIG ----
    _model("l4", "NVIDIA L4", ("l4", "nvidia l4", "l4-24gb", "l4 24gb"), (0x27B8,), 23034, "Ada Lovelace",
           "no MIG (not in the MIG User Guide tables); %s; memory_mib 23034 %s" % (_SRC_PCI, _SRC_SMI)),
    _model("l40s", "NVIDIA L40S", ("l40s", "nvidia l40s", "l40s-48gb", "l40s 48gb"), (0x26B9,), 46068,
           "Ada Lovelace",
           "no MIG (not in the MIG User Guide tables); %s; memory_mib 46068 %s" % (_SRC_PCI, _SRC_SMI)),
    _model("l40", "NVIDIA L40", ("l40", "nvidia l40", "l40-48gb", "l40 48gb"), (0x26B5,), 46068, "Ada Lovelace",
           "no MIG (not in the MIG User Guide tables); %s; memory_mib 46068 %s" % (_SRC_PCI, _SRC_SMI)),
    _model("a10", "NVIDIA A10", ("a10", "nvidia a10", "a10-24gb", "a10 24gb"), (0x2236,), 23028, "Ampere",
           "no MIG (not in the MIG User Guide tables); %s; memory_mib 23028 %s" % (_SRC_PCI, _SRC_SMI)),
    _model("t4", "Tesla T4", ("t4", "tesla t4", "nvidia t4", "nvidia tesla t4", "t4-16gb"), (0x1EB8,), 15360,
           "Turing",
           "no MIG (not in the MIG User Guide tables); %s; memory_mib 15360 %s" % (_SRC_PCI, _SRC_SMI)),
)

CATALOG: dict[str, GpuModel] = {m.key: m for m in _MODELS}

# Names that fit several models: lookup() refuses them, suggest() lists the candidates.
AMBIGUOUS: dict[str, tuple[str, ...]] = {
    "a100": ("a100-40gb", "a100-80gb"),
    "h100": ("h100-80gb", "h100-94gb", "h100-96gb"),   # NVML calls 0x2339 (94GB) plain "NVIDIA H100"
    "gh200": ("h100-96gb", "gh200-144gb"),
}

# (model key, profile name) of every profile whose memory_mib is estimated (see ESTIMATED).
ESTIMATED_PROFILES: tuple[tuple[str, str], ...] = tuple(
    (m.key, p.name) for m in _MODELS for p in m.mig_profiles if p.source.startswith("estimated"))


# --- lookups -----------------------------------------------------------------------------

_SEPARATORS = re.compile(r"[\s_\-]+")
_MIG_SUFFIX = re.compile(r"[-_ ]mig[-_ ].*$", re.IGNORECASE)   # GFD single strategy: "...-MIG-1g.10gb"
_PREFIXES = ("nvidia", "tesla")


def _norm(name: str) -> str:
    return _SEPARATORS.sub("", _MIG_SUFFIX.sub("", name.strip()).lower())


def _unprefixed(norm: str) -> str:
    for prefix in _PREFIXES:
        if norm.startswith(prefix) and len(norm) > len(prefix):
            return norm[len(prefix):]
    return norm


def _build_index() -> tuple[dict[str, str], dict[int, str]]:
    names: dict[str, str] = {}
    pci: dict[int, str] = {}
    for m in _MODELS:
        for raw in (m.key, m.product_name, m.label_product) + m.aliases:
            for n in (_norm(raw), _unprefixed(_norm(raw))):
                if names.setdefault(n, m.key) != m.key:
                    raise ValueError("gpu_catalog: name %r belongs to %s and %s" % (raw, names[n], m.key))
                if n in AMBIGUOUS:
                    raise ValueError("gpu_catalog: alias %r of %s is listed as ambiguous" % (raw, m.key))
        for p in m.pci_device_ids:
            if pci.setdefault(int(p, 16), m.key) != m.key:
                raise ValueError("gpu_catalog: PCI id %s belongs to %s and %s" % (p, pci[int(p, 16)], m.key))
    return names, pci


_BY_NAME, _BY_PCI = _build_index()


def lookup(name: str) -> GpuModel | None:
    """The model called ``name`` (key, alias, NVML name or GFD product label), or None.

    Case-insensitive; spaces, underscores and dashes are ignored, so is a leading
    "NVIDIA"/"Tesla" and a GFD "-MIG-<profile>" suffix. Ambiguous names (``AMBIGUOUS``,
    e.g. "h100") give None; ``suggest`` lists their candidates.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    n = _norm(name)
    key = _BY_NAME.get(n) or _BY_NAME.get(_unprefixed(n))
    return CATALOG[key] if key else None


def _strip_0x(s: str) -> str:
    return s[2:] if s.startswith("0x") else s   # not str.removeprefix: targets may run Python 3.8


def _pci_device(device_id) -> int | None:
    if isinstance(device_id, bool):
        return None
    if isinstance(device_id, int):
        value = device_id
    elif isinstance(device_id, str):
        s = device_id.strip().lower()
        if ":" in s:                              # lspci -n form "10de:2335"
            vendor, _colon, s = s.partition(":")
            if _strip_0x(vendor.strip()) != "%04x" % NVIDIA_VENDOR_ID:
                return None
            s = s.strip()
        s = _strip_0x(s)
        if not re.fullmatch(r"[0-9a-f]{1,8}", s):
            return None
        value = int(s, 16)
    else:
        return None
    if value > 0xFFFF:                            # device<<16 | vendor, as NVML and mig-parted write it
        if value > 0xFFFFFFFF or value & 0xFFFF != NVIDIA_VENDOR_ID:
            return None
        value >>= 16
    return value if value >= 0 else None


def lookup_pci(device_id: str | int) -> GpuModel | None:
    """The model with this PCI device id, or None.

    Accepts "0x2335", "2335", "0x233510DE" (device<<16 | vendor, as nvidia-smi and mig-parted
    write it), "10de:2335" (lspci -n) or an int of either form.
    """
    device = _pci_device(device_id)
    key = _BY_PCI.get(device) if device is not None else None
    return CATALOG[key] if key else None


def is_ambiguous(name: str) -> bool:
    """Whether ``name`` names several models (e.g. "h100"); ``suggest`` lists them."""
    return isinstance(name, str) and _unprefixed(_norm(name)) in AMBIGUOUS


def suggest(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` catalogue keys closest to ``name``, for "did you mean" messages."""
    if not isinstance(name, str) or not name.strip() or n <= 0:
        return []
    wanted = _unprefixed(_norm(name))
    if wanted in AMBIGUOUS:
        return list(AMBIGUOUS[wanted])[:n]
    best: dict[str, float] = {}
    # The letter O typed for the digit zero ("h2OO") is the commonest slip in a model name.
    zeros = wanted.replace("o", "0")
    for candidate, key in _BY_NAME.items():
        score = max(difflib.SequenceMatcher(None, w, candidate).ratio() for w in (wanted, zeros))
        if candidate.startswith(wanted) and len(wanted) >= 2:
            score = max(score, 0.75)              # "a100-40" -> "a100-40gb"
        if score >= 0.6 and score > best.get(key, 0.0):
            best[key] = score
    return [k for k, _score in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))][:n]


def mig_config_device_filter(model: GpuModel) -> list[str]:
    """mig-parted ``device-filter`` values for this model: "0x233510DE" (device<<16 | vendor)."""
    return ["0x%04X%04X" % (int(p, 16), NVIDIA_VENDOR_ID) for p in model.pci_device_ids]
