# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts with ``expect``: the host's hardware checked against its inventory entry
(gpushare_node's gpu_model, gpu_count, host_driver), end to end with a fake nvidia-smi
printing the real H200 query output. host_prep calls the module this way."""

from test_gpu_facts import _fake_smi, _run_module

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_facts import inventory_mismatches


def test_matching_inventory_passes(tmp_path):
    smi = _fake_smi(tmp_path, "query-gpu-noheader.csv")
    for model in ("h200", "NVIDIA H200", "0x2335", "h200-141gb"):
        rc, result, proc = _run_module(tmp_path, {"nvidia_smi_path": smi, "expect": {
            "gpu_model": model, "gpu_count": 1, "host_driver": True}})
        assert rc == 0, (model, proc.stdout)
        assert result.get("failed") is not True


def test_wrong_count_model_and_driver_all_named(tmp_path):
    smi = _fake_smi(tmp_path, "query-gpu-noheader.csv")
    rc, result, _proc = _run_module(tmp_path, {"nvidia_smi_path": smi, "expect": {
        "gpu_model": "a100-80gb", "gpu_count": 4, "host_driver": False}})
    assert rc != 0 and result["failed"] is True
    text = " | ".join(result["mismatches"])
    assert len(result["mismatches"]) == 3, text
    assert "gpu_count is 4 but nvidia-smi lists 1 GPU(s): 0 NVIDIA H200; set gpu_count: 1" in text
    assert "gpu_model is 'a100-80gb' (a100-80gb) but GPU 0 is NVIDIA H200" in text
    assert "host_driver is false but the host has a working NVIDIA driver (580.159.04)" in text
    assert result["msg"].startswith("The host does not match its inventory entry: ")
    # The facts are still returned, so a caller can show what was found.
    assert result["ansible_facts"]["gpushare_gpus_detected"][0]["model"] == "h200-141gb"


def test_host_driver_promised_but_missing(tmp_path):
    rc, result, _proc = _run_module(tmp_path, {"nvidia_smi_path": str(tmp_path / "none" / "nvidia-smi"),
                                               "expect": {"gpu_model": "h200", "gpu_count": 8, "host_driver": True}})
    assert rc != 0
    assert result["mismatches"] == [
        "gpushare_node.host_driver is true but no working NVIDIA driver answers on the host "
        "(nvidia-smi missing or failing); install the driver or set host_driver: false"]


def test_no_driver_and_none_promised_checks_nothing_else():
    # Without a driver, model and count cannot be read: the GPU Operator installs the driver later.
    assert inventory_mismatches({"gpu_model": "h200", "gpu_count": 8, "host_driver": False}, [], False) == []


def test_unknown_inventory_model_is_a_mismatch():
    gpu = {"index": 0, "name": "NVIDIA H200", "pci_device_id": "0x2335", "model": "h200-141gb",
           "driver_version": "580.159.04"}
    (msg,) = inventory_mismatches({"gpu_model": "h2OO", "gpu_count": 1, "host_driver": True}, [gpu], True)
    assert "gpu_model is 'h2OO' (not in the catalogue)" in msg
