# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts: parsers against real H200 output, the catalogue against the hardware,
and the module end to end with a fake nvidia-smi.

The fixtures in tests/fixtures/nvidia/h200/ were captured read-only on one NVIDIA H200
(SXM, PCI 0x2335), driver 580.159.04, MIG disabled (see docs/gpu-facts.md).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from inventories import ROOT  # noqa: E402
COLLECTIONS = ROOT / ".collections"
if str(COLLECTIONS) not in sys.path:  # tests/unit/conftest.py may already have done this
    sys.path.insert(0, str(COLLECTIONS))

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_facts import (  # noqa: E402
    model_key,
    parse_mig_placements_lgipp,
    parse_mig_profiles_lgip,
    parse_query_gpu_csv,
    pci_device_id,
    query_gpu_args,
)

H200 = ROOT / "tests" / "fixtures" / "nvidia" / "h200"
FAKE_UUID = "GPU-00000000-0000-0000-0000-000000000001"


def _text(name):
    return (H200 / name).read_text()


@pytest.fixture(scope="module")
def nvml():
    return json.loads(_text("h200-nvml-mig-profiles.json"))


@pytest.fixture(scope="module")
def hw_profiles(nvml):
    """Supported GPU instance profiles as NVML reports them, by name without "MIG "."""
    (gpu,) = nvml["gpus"]
    found = {}
    for p in gpu["gpu_instance_profiles"]:
        if p["supported"]:
            found[p["name"].split(None, 1)[1]] = p
    return found


# --- nvidia-smi --query-gpu -------------------------------------------------------

H200_PARSED = {
    "index": 0,
    "name": "NVIDIA H200",
    "pci_device_id": "0x2335",
    "bus_id": "00000000:00:06.0",
    "memory_total_mib": 143771,
    "driver_version": "580.159.04",
    "mig_mode_current": False,
    "mig_mode_pending": False,
    "uuid": FAKE_UUID,
    "compute_cap": "9.0",
}


def test_query_gpu_h200_fixture():
    assert parse_query_gpu_csv(_text("query-gpu-noheader.csv")) == [H200_PARSED]


def test_query_gpu_with_header_and_units():
    # --format=csv (no noheader/nounits): header skipped, " MiB" stripped
    assert parse_query_gpu_csv(_text("query-gpu-header.csv")) == [H200_PARSED]


def test_query_gpu_args_match_the_parser():
    args = query_gpu_args("/usr/bin/nvidia-smi")
    assert args[0] == "/usr/bin/nvidia-smi"
    assert args[1] == ("--query-gpu=index,name,pci.device_id,pci.bus_id,memory.total,driver_version,"
                       "mig.mode.current,mig.mode.pending,uuid,compute_cap")
    assert args[2] == "--format=csv,noheader,nounits"


def test_query_gpu_mig_not_available_and_several_gpus():
    text = ("0, NVIDIA L40S, 0x26B910DE, 00000000:01:00.0, 46068, 580.159.04, [N/A], [N/A], GPU-a, 8.9\n"
            "1, NVIDIA H100 80GB HBM3, 0x233010DE, 00000000:02:00.0, 81559, 580.159.04, Enabled, Disabled,"
            " GPU-b, 9.0\n\n")
    gpus = parse_query_gpu_csv(text)
    assert [g["index"] for g in gpus] == [0, 1]
    assert (gpus[0]["mig_mode_current"], gpus[0]["mig_mode_pending"]) == (None, None)
    assert (gpus[1]["mig_mode_current"], gpus[1]["mig_mode_pending"]) == (True, False)
    assert [g["pci_device_id"] for g in gpus] == ["0x26B9", "0x2330"]


def test_query_gpu_empty_output():
    assert parse_query_gpu_csv("") == []


@pytest.mark.parametrize("line", [
    "0, NVIDIA H200, 0x233510DE",
    "0, NVIDIA H200, 0x233510DE, 00000000:00:06.0, 143771, 580.159.04, Maybe, Disabled, GPU-x, 9.0",
])
def test_query_gpu_bad_lines_raise(line):
    with pytest.raises(ValueError):
        parse_query_gpu_csv(line)


@pytest.mark.parametrize("raw, expected", [
    ("0x233510DE", "0x2335"),
    ("0x233B10DE", "0x233B"),
    ("0x233b10de", "0x233B"),
    ("0x2335", "0x2335"),
    ("2335", "0x2335"),
    ("[N/A]", None),
])
def test_pci_device_id(raw, expected):
    assert pci_device_id(raw) == expected


def test_model_key_h200():
    (gpu,) = parse_query_gpu_csv(_text("query-gpu-noheader.csv"))
    assert model_key(gpu) == "h200-141gb"


def test_model_key_falls_back_to_name_and_unknown_is_none():
    assert model_key({"pci_device_id": "0xFFFF", "name": "NVIDIA H200"}) == "h200-141gb"
    assert model_key({"pci_device_id": None, "name": "NVIDIA H200"}) == "h200-141gb"
    assert model_key({"pci_device_id": "0xFFFF", "name": "Not A GPU 9000"}) is None


# --- MIG state and profiles --------------------------------------------------------

def test_mig_disabled_everywhere(nvml):
    (gpu,) = parse_query_gpu_csv(_text("query-gpu-noheader.csv"))
    assert gpu["mig_mode_current"] is False and gpu["mig_mode_pending"] is False
    assert nvml["gpus"][0]["mig_mode"] == {"current": 0, "pending": 0}
    assert "<current_mig>Disabled</current_mig>" in _text("nvidia-smi-q.xml")
    # -lgi / -lcip need MIG enabled; -lgip / -lgipp answer anyway (driver 580)
    assert _text("mig-lgi.txt").strip() == "No MIG-enabled devices found."
    assert parse_mig_profiles_lgip(_text("mig-lgi.txt")) == []
    assert parse_mig_placements_lgipp(_text("mig-lgi.txt")) == []


def test_lgip_h200(hw_profiles):
    profiles = parse_mig_profiles_lgip(_text("mig-lgip.txt"))
    assert [(p["name"], p["profile_id"], p["instances_total"], p["memory_mib"]) for p in profiles] == [
        ("1g.18gb", 19, 7, 16384),
        ("1g.18gb+me", 20, 1, 16384),
        ("1g.35gb", 15, 4, 33280),
        ("2g.35gb", 14, 3, 33280),
        ("3g.71gb", 9, 2, 71424),
        ("4g.71gb", 5, 1, 71424),
        ("7g.141gb", 0, 1, 143360),
    ]
    for p in profiles:  # nvidia-smi and NVML agree
        hw = hw_profiles[p["name"]]
        assert (p["profile_id"], p["instances_total"], p["memory_mib"], p["sm"], p["ce"], p["dec"],
                p["jpeg"], p["ofa"]) == (hw["id"], hw["instanceCount"], hw["memorySizeMB"],
                                         hw["multiprocessorCount"], hw["copyEngineCount"],
                                         hw["decoderCount"], hw["jpegCount"], hw["ofaCount"])
        assert p["instances_free"] == p["instances_total"] and p["p2p"] is False


def test_lgipp_h200(hw_profiles):
    by_id = {p["id"]: p for p in hw_profiles.values()}
    placements = parse_mig_placements_lgipp(_text("mig-lgipp.txt"))
    assert [(p["profile_id"], p["starts"], p["size"]) for p in placements] == [
        (19, [0, 1, 2, 3, 4, 5, 6], 1),
        (20, [0, 1, 2, 3, 4, 5, 6], 1),
        (15, [0, 2, 4, 6], 2),
        (14, [0, 2, 4], 2),
        (9, [0, 4], 4),
        (5, [0], 4),
        (0, [0], 8),
    ]
    for p in placements:
        hw = by_id[p["profile_id"]]["placements"]
        assert [(x["start"], x["size"]) for x in hw] == [(s, p["size"]) for s in p["starts"]]


# --- the catalogue against the hardware ---------------------------------------------

def test_catalogue_h200_profiles_match_hardware(hw_profiles, record_property):
    card = gpu_catalog.CATALOG["h200-141gb"]
    catalogue = {p.name: p for p in card.mig_profiles}
    assert sorted(catalogue) == sorted(hw_profiles), "profile names differ from the hardware"
    memory = {}
    for name, hw in sorted(hw_profiles.items()):
        ours = catalogue[name]
        sizes = {x["size"] for x in hw["placements"]}
        assert len(sizes) == 1
        assert ours.size == sizes.pop(), name
        assert list(ours.starts) == [x["start"] for x in hw["placements"]], name
        assert ours.max_count == hw["instanceCount"], name
        assert ours.compute_slices == hw["sliceCount"], name
        memory[name] = {"catalogue_mib": ours.memory_mib, "hardware_mib": hw["memorySizeMB"],
                        "difference_mib": ours.memory_mib - hw["memorySizeMB"]}
    record_property("h200_memory_mib", json.dumps(memory, sort_keys=True))
    print("H200 MIG memory, catalogue vs hardware (MiB):", json.dumps(memory, indent=1, sort_keys=True))


# --- the module, end to end ---------------------------------------------------------

MODULE = ROOT / "plugins" / "modules" / "gpu_facts.py"


def _run_module(tmp_path, args):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(COLLECTIONS)] + sys.path))
    proc = subprocess.run([sys.executable, str(MODULE), str(args_file)], capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), check=False)
    return proc.returncode, json.loads(proc.stdout), proc


def _warnings(result):
    """Warning texts; ansible-core 2.19 modules emit them as WarningSummary dicts."""
    out = []
    for w in result.get("warnings", []):
        if isinstance(w, dict):
            w = (w.get("event") or {}).get("msg", "") or w.get("msg", "")
        out.append(w)
    return out


def _fake_smi(tmp_path, fixture=None, rc=0, stderr=""):
    script = tmp_path / "nvidia-smi"
    body = "#!/bin/sh\n"
    if fixture:
        body += "cat '%s'\n" % (H200 / fixture)
    if stderr:
        (tmp_path / "stderr.txt").write_text(stderr + "\n")
        body += "cat '%s' >&2\n" % (tmp_path / "stderr.txt")
    body += "exit %d\n" % rc
    script.write_text(body)
    script.chmod(0o755)
    return str(script)


def test_module_h200(tmp_path):
    rc, result, proc = _run_module(tmp_path, {"nvidia_smi_path": _fake_smi(tmp_path, "query-gpu-noheader.csv"),
                                              "_ansible_check_mode": True})
    assert rc == 0, proc.stderr
    assert result["changed"] is False
    assert result["host_driver"] == {"installed": True, "version": "580.159.04"}
    assert result["ansible_facts"]["gpushare_gpus_detected"] == [dict(H200_PARSED, model="h200-141gb")]
    assert not _warnings(result)


def test_module_without_nvidia_smi(tmp_path):
    rc, result, proc = _run_module(tmp_path, {"nvidia_smi_path": str(tmp_path / "missing" / "nvidia-smi")})
    assert rc == 0, proc.stderr
    assert result.get("failed") is not True
    assert result["host_driver"] == {"installed": False, "version": None}
    assert result["ansible_facts"]["gpushare_gpus_detected"] == []
    rc, result, _proc = _run_module(tmp_path, {"nvidia_smi_path": "no-such-nvidia-smi-binary"})
    assert rc == 0 and result["host_driver"]["installed"] is False


def test_module_driver_not_loaded_warns(tmp_path):
    msg = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    rc, result, proc = _run_module(tmp_path, {"nvidia_smi_path": _fake_smi(tmp_path, rc=9, stderr=msg)})
    assert rc == 0, proc.stderr
    assert result["host_driver"] == {"installed": False, "version": None}
    assert result["ansible_facts"]["gpushare_gpus_detected"] == []
    assert any(msg in w for w in _warnings(result))


def test_module_unknown_gpu_warns(tmp_path):
    data = tmp_path / "unknown.csv"
    data.write_text("0, Mystery GPU, 0xFFFF10DE, 00000000:01:00.0, 1024, 580.159.04, [N/A], [N/A], GPU-z, 1.0\n")
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\ncat '%s'\n" % data)
    script.chmod(0o755)
    rc, result, proc = _run_module(tmp_path, {"nvidia_smi_path": str(script)})
    assert rc == 0, proc.stderr
    (gpu,) = result["ansible_facts"]["gpushare_gpus_detected"]
    assert gpu["model"] is None and gpu["mig_mode_current"] is None
    assert any("not in the gpushare GPU catalogue" in w for w in _warnings(result))


def test_module_through_ansible(tmp_path):
    """AnsiballZ must find the module_utils (gpu_facts and gpu_catalog) on its own."""
    # Both come with `make test` (venv and collection-link); missing means a broken setup, not a skip.
    ansible = shutil.which("ansible", path=os.path.dirname(sys.executable)) or shutil.which("ansible")
    assert ansible, "the ansible CLI is not installed next to %s" % sys.executable
    assert (COLLECTIONS / "ansible_collections" / "gpushare" / "cluster").exists(), "run make collection-link"
    smi = _fake_smi(tmp_path, "query-gpu-noheader.csv")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_REMOTE_TEMP=str(tmp_path / "rtmp"))
    proc = subprocess.run([ansible, "localhost", "-c", "local", "-i", "localhost,", "--check",
                           "-m", "gpushare.cluster.gpu_facts", "-a", "nvidia_smi_path=%s" % smi],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["ansible_facts"]["gpushare_gpus_detected"][0]["model"] == "h200-141gb"
