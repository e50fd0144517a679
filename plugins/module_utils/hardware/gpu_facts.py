# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for read-only ``nvidia-smi`` output, and the map to the GPU catalogue.

Pure Python (standard library only, no Ansible import), so the unit tests and the
``gpu_facts`` module share it. Every parser takes the text that ``nvidia-smi`` printed
and returns plain dicts/lists (JSON-serialisable).

* ``parse_query_gpu_csv`` reads ``nvidia-smi --query-gpu=<QUERY_GPU_FIELDS>
  --format=csv,noheader,nounits`` (see ``query_gpu_args``).
* ``parse_mig_profiles_lgip`` reads ``nvidia-smi mig -lgip`` (GPU instance profiles).
* ``parse_mig_placements_lgipp`` reads ``nvidia-smi mig -lgipp`` (possible placements).
* ``model_key`` maps one parsed GPU to a ``gpu_catalog`` key (PCI device id first,
  then the marketing name).

Fixtures of real output (an H200 on driver 580.159.04) are in tests/fixtures/nvidia/.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import csv
import re

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog

# The order matters: parse_query_gpu_csv reads the columns by position.
QUERY_GPU_FIELDS = (
    "index",
    "name",
    "pci.device_id",
    "pci.bus_id",
    "memory.total",
    "driver_version",
    "mig.mode.current",
    "mig.mode.pending",
    "uuid",
    "compute_cap",
)

_NOT_AVAILABLE = ("", "[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]")
_MIG_MODES = {"enabled": True, "disabled": False}

# `nvidia-smi mig -lgip` prints each profile on two table rows:
#   |   0  MIG 1g.18gb         19     7/7        16.00      No     16     1     0   |
#   |                                                               1     1     0   |
_LGIP_ROW1 = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?P<name>MIG\s+\S+)\s+(?P<id>\d+)\s+(?P<free>\d+)/(?P<total>\d+)\s+"
    r"(?P<mem>[0-9.]+)\s+(?P<p2p>\S+)\s+(?P<sm>\d+)\s+(?P<dec>\d+)\s+(?P<enc>\d+)\s*\|\s*$")
_LGIP_ROW2 = re.compile(r"^\|\s+(?P<ce>\d+)\s+(?P<jpeg>\d+)\s+(?P<ofa>\d+)\s*\|\s*$")
# GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
# GPU  0 Profile ID  5 Placement : {0}:4
_LGIPP_ROW = re.compile(
    r"^\s*GPU\s+(?P<gpu>\d+)\s+Profile\s+ID\s+(?P<id>\d+)\s+Placements?\s*:\s*"
    r"\{(?P<starts>[0-9,\s]*)\}\s*:\s*(?P<size>\d+)\s*$")

MIB_PER_GIB = 1024


def query_gpu_args(nvidia_smi_path="nvidia-smi"):
    """The argv of the read-only query that ``parse_query_gpu_csv`` reads."""
    return [nvidia_smi_path, "--query-gpu=" + ",".join(QUERY_GPU_FIELDS),
            "--format=csv,noheader,nounits"]


def _value(text):
    text = text.strip()
    return None if text.lower() in _NOT_AVAILABLE else text


def _int(text, unit=None):
    text = _value(text)
    if text is None:
        return None
    if unit and text.endswith(unit):  # tolerate output made without "nounits"
        text = text[:-len(unit)].strip()
    return int(text)


def _mig_mode(text):
    text = _value(text)
    if text is None:
        return None
    try:
        return _MIG_MODES[text.lower()]
    except KeyError:
        raise ValueError("unexpected MIG mode %r (expected Enabled, Disabled or [N/A])" % text)


def pci_device_id(value):
    """PCI device id as "0x2335" from nvidia-smi/NVML's combined "0x233510DE".

    NVML's ``pciDeviceId`` packs the device id in the upper 16 bits and the vendor id
    (0x10DE for NVIDIA) in the lower 16. A bare 16-bit id ("0x2335", "2335") is kept.
    Hex digits are upper case after a lower-case "0x", as NVIDIA writes them.
    """
    text = _value(value or "")
    if text is None:
        return None
    raw = text.lower()
    if raw.startswith("0x"):
        raw = raw[2:]
    number = int(raw, 16)
    if len(raw) > 4:
        number >>= 16
    return "0x%04X" % number


def parse_query_gpu_csv(text):
    """Parse ``nvidia-smi --query-gpu=<QUERY_GPU_FIELDS> --format=csv,noheader,nounits``.

    Returns one dict per GPU: index (int), name, pci_device_id ("0x2335"), bus_id,
    memory_total_mib (int), driver_version, mig_mode_current / mig_mode_pending
    (True, False, or None for "[N/A]" on GPUs without MIG), uuid, compute_cap.
    A header line (from ``--format=csv``) is skipped. Raises ValueError on a line that
    does not have the expected columns.
    """
    gpus = []
    rows = csv.reader([line for line in text.splitlines() if line.strip()], skipinitialspace=True)
    for number, row in enumerate(rows, 1):
        if row and row[0].strip().lower() == "index":
            continue  # header
        if len(row) != len(QUERY_GPU_FIELDS):
            raise ValueError("nvidia-smi --query-gpu line %d has %d columns, expected %d (%s): %r"
                             % (number, len(row), len(QUERY_GPU_FIELDS), ",".join(QUERY_GPU_FIELDS),
                                ", ".join(row)))
        (index, name, device_id, bus_id, memory, driver, mig_current, mig_pending, uuid,
         compute_cap) = row
        gpus.append({
            "index": _int(index),
            "name": _value(name),
            "pci_device_id": pci_device_id(device_id),
            "bus_id": _value(bus_id),
            "memory_total_mib": _int(memory, "MiB"),
            "driver_version": _value(driver),
            "mig_mode_current": _mig_mode(mig_current),
            "mig_mode_pending": _mig_mode(mig_pending),
            "uuid": _value(uuid),
            "compute_cap": _value(compute_cap),
        })
    return gpus


def parse_mig_profiles_lgip(text):
    """Parse the table of ``nvidia-smi mig -lgip``.

    Returns one dict per (GPU, profile): gpu (int), name ("1g.18gb", without the
    "MIG " prefix), profile_id, instances_free, instances_total, memory_gib (float, as
    printed), memory_mib (int), p2p (bool), sm, dec, enc, ce, jpeg, ofa (ints).
    Text without a profile table (e.g. "No MIG-enabled devices found.") gives [].
    """
    profiles = []
    pending = None
    for line in text.splitlines():
        line = line.rstrip()
        match = _LGIP_ROW1.match(line)
        if match:
            gib = float(match.group("mem"))
            pending = {
                "gpu": int(match.group("gpu")),
                "name": match.group("name").split(None, 1)[1],
                "profile_id": int(match.group("id")),
                "instances_free": int(match.group("free")),
                "instances_total": int(match.group("total")),
                "memory_gib": gib,
                "memory_mib": int(round(gib * MIB_PER_GIB)),
                "p2p": match.group("p2p").lower() == "yes",
                "sm": int(match.group("sm")),
                "dec": int(match.group("dec")),
                "enc": int(match.group("enc")),
            }
            continue
        match = _LGIP_ROW2.match(line)
        if match and pending is not None:
            pending.update({key: int(match.group(key)) for key in ("ce", "jpeg", "ofa")})
            profiles.append(pending)
            pending = None
    if pending is not None:  # first row without its second row: keep what was read
        profiles.append(pending)
    return profiles


def parse_mig_placements_lgipp(text):
    """Parse ``nvidia-smi mig -lgipp``: one dict per line with gpu, profile_id, starts
    (list of start memory slices) and size (memory slices per instance)."""
    placements = []
    for line in text.splitlines():
        match = _LGIPP_ROW.match(line)
        if match:
            starts = [int(s) for s in match.group("starts").replace(" ", "").split(",") if s]
            placements.append({"gpu": int(match.group("gpu")), "profile_id": int(match.group("id")),
                               "starts": starts, "size": int(match.group("size"))})
    return placements


def model_key(gpu):
    """The ``gpu_catalog`` key of one parsed GPU (PCI device id first, then name), or None."""
    model = None
    device_id = gpu.get("pci_device_id")
    if device_id:
        model = gpu_catalog.lookup_pci(device_id)
    if model is None and gpu.get("name"):
        model = gpu_catalog.lookup(gpu["name"])
    return model.key if model is not None else None


def _inventory_model(name):
    """The catalogue model the inventory's ``gpu_model`` names (key, alias, NVML name or PCI id)."""
    if name is None:
        return None
    return gpu_catalog.lookup(str(name)) or gpu_catalog.lookup_pci(str(name))


def inventory_mismatches(expected, gpus, driver_installed):
    """What the host's hardware contradicts in its inventory entry, as messages (empty: agrees).

    ``expected`` is the host's ``gpushare_node`` (``gpu_model``, ``gpu_count``, ``host_driver``),
    ``gpus`` the parsed GPUs (``parse_query_gpu_csv`` with ``model`` set by ``model_key``) and
    ``driver_installed`` whether a working driver answered. Model and count can only be read
    through a working driver: without one (the GPU Operator installs it later) only
    ``host_driver`` is checked.
    """
    problems = []
    host_driver = bool(expected.get("host_driver", False))
    if host_driver and not driver_installed:
        problems.append("gpushare_node.host_driver is true but no working NVIDIA driver answers on the host "
                        "(nvidia-smi missing or failing); install the driver or set host_driver: false")
    if not host_driver and driver_installed:
        problems.append("gpushare_node.host_driver is false but the host has a working NVIDIA driver (%s); "
                        "set host_driver: true (the GPU Operator's driver must not be installed over it) "
                        "or remove the host driver" % (gpus[0].get("driver_version") if gpus else "unknown version"))
    if not driver_installed:
        return problems
    count = expected.get("gpu_count")
    if count is not None and int(count) != len(gpus):
        problems.append("gpushare_node.gpu_count is %s but nvidia-smi lists %d GPU(s): %s; set gpu_count: %d"
                        % (count, len(gpus), ", ".join("%s %s" % (g["index"], g["name"]) for g in gpus) or "none",
                           len(gpus)))
    wanted = _inventory_model(expected.get("gpu_model"))
    if expected.get("gpu_model") is not None:
        want_key = wanted.key if wanted is not None else None
        for gpu in gpus:
            if gpu.get("model") != want_key:
                problems.append("gpushare_node.gpu_model is %r (%s) but GPU %s is %s (PCI device id %s, catalogue %s); "
                                "set gpu_model to the GPU the host has"
                                % (expected.get("gpu_model"), want_key or "not in the catalogue", gpu["index"],
                                   gpu["name"], gpu.get("pci_device_id"), gpu.get("model") or "unknown"))
    return problems
