# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubeadm role's decisions: preflight problems, secret redaction, bridge CNI, node names."""

import pytest

from ansible_collections.gpushare.cluster.plugins.filter import gpushare
from ansible_collections.gpushare.cluster.plugins.filter.__kubeadm import FilterModule
from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import kubeadm_node
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import model

FILTERS = {**FilterModule().filters(), **gpushare.FilterModule().filters()}

NO_SWAP = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
FILESYSTEMS = "nodev\tsysfs\nnodev\toverlay\n\text4\n"
HEALTHY = {
    "swaps": NO_SWAP,
    "filesystems": FILESYSTEMS,
    "required_modules": ["overlay", "br_netfilter"],
    "present_paths": ["/proc/sys/net/bridge/bridge-nf-call-iptables"],
}
DUMP_SYSTEMD = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = ""
  SystemdCgroup = true
"""


def node(name, cidr, address, machine_id="m-" + "a" * 30):
    return {"metadata": {"name": name}, "spec": {"podCIDR": cidr},
            "status": {"addresses": [{"type": "Hostname", "address": name},
                                     {"type": "InternalIP", "address": address}],
                       "nodeInfo": {"machineID": machine_id}}}


def test_healthy_host_has_no_problems():
    assert kubeadm_node.preflight_problems("gpu01", dict(HEALTHY, containerd_config_dump=DUMP_SYSTEMD), {}) == []


def test_swap_on_is_reported_with_the_fix():
    checks = dict(HEALTHY, swaps=NO_SWAP + "/swap.img\tfile\t4194300\t0\t-2\n")
    [problem] = kubeadm_node.preflight_problems("gpu01", checks, {"cgroupDriver": "systemd"})
    assert "gpu01: swap is on (/swap.img)" in problem
    assert "swapoff -a" in problem and "/etc/fstab" in problem


def test_swap_is_accepted_when_kubelet_allows_it():
    checks = dict(HEALTHY, swaps=NO_SWAP + "/swap.img\tfile\t4194300\t0\t-2\n")
    assert kubeadm_node.preflight_problems("gpu01", checks, {"failSwapOn": False}) == []


@pytest.mark.parametrize("present, filesystems, missing", [
    ([], FILESYSTEMS, "br_netfilter"),
    (["/proc/sys/net/bridge/bridge-nf-call-iptables"], "nodev\tsysfs\n", "overlay"),
])
def test_missing_module_is_named_with_the_fix(present, filesystems, missing):
    checks = dict(HEALTHY, present_paths=present, filesystems=filesystems)
    [problem] = kubeadm_node.preflight_problems("gpu01", checks, {})
    assert "kernel module %s is not loaded" % missing in problem
    assert "modprobe %s" % missing in problem


def test_other_modules_are_probed_in_sys_module():
    assert kubeadm_node.module_probe_paths(["overlay", "br_netfilter", "nvidia"]) == [
        "/proc/sys/net/bridge/bridge-nf-call-iptables", "/sys/module/nvidia"]
    checks = dict(HEALTHY, required_modules=["nvidia"], present_paths=[])
    [problem] = kubeadm_node.preflight_problems("gpu01", checks, {})
    assert "no /sys/module/nvidia" in problem


@pytest.mark.parametrize("dump", [
    DUMP_SYSTEMD.replace("true", "false"),
    'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  BinaryName = ""\n',
])
def test_cgroupfs_containerd_with_a_systemd_kubelet_is_refused(dump):
    [problem] = kubeadm_node.preflight_problems("gpu01", dict(HEALTHY, containerd_config_dump=dump), {})
    assert "containerd runs containers with the cgroupfs cgroup driver" in problem
    assert "kubelet is configured for systemd" in problem
    assert "/etc/containerd/conf.d/" in problem


def test_cgroup_driver_of_containerd_2():
    dump = 'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
    assert kubeadm_node.preflight_problems("gpu01", dict(HEALTHY, containerd_config_dump=dump), {}) == []
    [problem] = kubeadm_node.preflight_problems("gpu01", dict(HEALTHY, containerd_config_dump=dump),
                                                {"cgroupDriver": "cgroupfs"})
    assert "kubelet is configured for cgroupfs" in problem


def test_cgroup_driver_without_tomllib(monkeypatch):
    monkeypatch.setattr(kubeadm_node, "tomllib", None)
    dump = DUMP_SYSTEMD.replace("true", "false") + "[plugins.other]\n  SystemdCgroup = true\n"
    [problem] = kubeadm_node.preflight_problems("gpu01", dict(HEALTHY, containerd_config_dump=dump), {})
    assert "cgroupfs" in problem


def test_node_name_taken_by_another_machine():
    checks = dict(HEALTHY, cluster_nodes=[node("gpu01", "10.244.1.0/24", "172.18.0.3", "aaa")],
                  machine_id="bbb\n", is_member=False)
    [problem] = kubeadm_node.preflight_problems("GPU01.example.com", checks, {})
    assert "node name gpu01 is already taken by another machine (machine-id aaa, address 172.18.0.3)" in problem
    assert "kubectl delete node gpu01" in problem


def test_node_name_of_the_same_machine_or_a_member_is_fine():
    nodes = [node("gpu01", "10.244.1.0/24", "172.18.0.3", "aaa")]
    same = dict(HEALTHY, cluster_nodes=nodes, machine_id="aaa", is_member=False)
    member = dict(HEALTHY, cluster_nodes=nodes, machine_id="bbb", is_member=True)
    assert kubeadm_node.preflight_problems("gpu01", same, {}) == []
    assert kubeadm_node.preflight_problems("gpu01", member, {}) == []


def test_all_problems_at_once():
    checks = dict(HEALTHY, swaps=NO_SWAP + "/dev/sda2 partition 1 0 -2\n", present_paths=[],
                  containerd_config_dump=DUMP_SYSTEMD.replace("true", "false"))
    assert len(kubeadm_node.preflight_problems("gpu01", checks, {})) == 3


def test_bad_checks_is_a_filter_error():
    with pytest.raises(Exception, match="gpushare.cluster.kubeadm_preflight_problems: checks must be a mapping"):
        FILTERS["kubeadm_preflight_problems"]("gpu01", "nonsense", {})


def test_redaction_masks_tokens_and_certificate_keys():
    output = ("You can now join any number of control-plane nodes running the following command\n"
              "  kubeadm join 172.18.0.2:6443 --token abcdef.0123456789abcdef \\\n"
              "    --discovery-token-ca-cert-hash sha256:" + "1" * 64 + " \\\n"
              "    --control-plane --certificate-key " + "f" * 64 + "\n"
              "[upload-certs] Using certificate key:\n" + "e" * 64 + "\n")
    redacted = FILTERS["kubeadm_redact"](output)
    assert "abcdef.0123456789abcdef" not in redacted
    assert "f" * 64 not in redacted and "e" * 64 not in redacted
    assert "--token <token>" in redacted and "kubeadm join 172.18.0.2:6443" in redacted
    assert FILTERS["kubeadm_redact"](None) == ""


def test_bridge_cni_of_a_node_routes_to_the_others():
    nodes = [node("cp", "10.244.0.0/24", "172.18.0.2"), node("worker", "10.244.1.0/24", "172.18.0.3")]
    cni = FILTERS["kubeadm_bridge_cni"](nodes, "worker")
    assert cni["conflist"]["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.244.1.0/24"}]]
    assert cni["conflist"]["plugins"][0]["type"] == "bridge"
    assert cni["routes"] == [{"dest": "10.244.0.0/24", "via": "172.18.0.2"}]


def test_bridge_cni_errors_name_the_node_and_the_fix():
    with pytest.raises(Exception, match="node gpu09 is not in the cluster"):
        FILTERS["kubeadm_bridge_cni"]([node("cp", "10.244.0.0/24", "172.18.0.2")], "gpu09")
    with pytest.raises(Exception, match="no spec.podCIDR.*kubeadm_pod_subnet"):
        FILTERS["kubeadm_bridge_cni"]([node("cp", "", "172.18.0.2")], "cp")


def test_node_name_filter_is_the_plan_rule():
    for host in ["GPU01.example.com", "gpu-02", "Node3"]:
        assert FILTERS["node_name"](host) == model.node_name(host)
    assert FILTERS["node_name"]("GPU01.example.com") == "gpu01"


def test_a_join_command_without_its_parts_is_refused_without_echoing_the_token():
    with pytest.raises(ValueError) as refused:
        kubeadm_node.join_configuration("kubeadm join --token abcdef.0123456789abcdef", "gpu01", "/run/c.sock")
    assert "abcdef.0123456789abcdef" not in str(refused.value) and "<token>" in str(refused.value)
    with pytest.raises(ValueError, match="not a kubeadm join command"):
        kubeadm_node.join_configuration("Error: cannot reach the API server", "gpu01", "/run/c.sock")


def test_token_ids_are_the_parts_before_the_dot_of_each_token():
    # Two outputs by hand: kubeadm init's join hint and the token create line, one token twice.
    init = "kubeadm join 10.0.0.1:6443 --token 9x8y7z.aaaaaaaaaaaaaaaa \\\n --discovery-token-ca-cert-hash sha256:" + "0" * 64
    created = "kubeadm join 10.0.0.1:6443 --token abc123.bbbbbbbbbbbbbbbb ... 9x8y7z.aaaaaaaaaaaaaaaa"
    assert FILTERS["kubeadm_token_ids"]([init, created, None]) == ["9x8y7z", "abc123"]


def test_openpgp_fingerprints_are_gpgs(tmp_path):
    """Keys made by gpg here; gpg's own fingerprint listing is the expected answer."""
    import base64
    import os
    import subprocess
    env = dict(os.environ, GNUPGHOME=str(tmp_path))
    tmp_path.chmod(0o700)
    for uid in ("first repository", "second repository"):
        subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", uid, "rsa2048", "sign", "never"],
                       env=env, check=True, capture_output=True)
    listing = subprocess.run(["gpg", "--with-colons", "--list-keys"], env=env, check=True, capture_output=True,
                             text=True).stdout.splitlines()
    # The fpr record that follows each pub record (sub keys' fpr records follow sub records).
    expected = [listing[i + 1].split(":")[9] for i, line in enumerate(listing) if line.startswith("pub:")]
    assert len(expected) == 2
    armored = subprocess.run(["gpg", "--armor", "--export"], env=env, check=True, capture_output=True).stdout
    binary = subprocess.run(["gpg", "--export"], env=env, check=True, capture_output=True).stdout
    for data in (armored, binary):
        assert FILTERS["openpgp_fingerprints"](base64.b64encode(data).decode()) == expected
    with pytest.raises(ValueError, match="no OpenPGP public key"):
        kubeadm_node.openpgp_fingerprints(base64.b64encode(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n").decode())
