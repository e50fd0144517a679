# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubeadm role's join and revocation tasks (roles/kubeadm/tasks/join.yml), run by
ansible-playbook against stand-ins of ``kubeadm`` and ``kubectl`` that record what they were
given: the argv each process really got, the mode and content of the file it was pointed at.
The secrets are known here (they are the test's own), so each is looked for literally."""

from __future__ import annotations

import os

import yaml

from playbooks import run_playbook

TOKEN = "abcdef.0123456789abcdef"
INIT_TOKEN = "qwerty.zyxwvutsrqponmlk"
CA_HASH = "sha256:" + "ab" * 32
CERTIFICATE_KEY = "c0ffee" * 10 + "beef"
INIT_OUTPUT = ("Your Kubernetes control-plane has initialized successfully!\nkubeadm join 10.1.2.3:6443 --token %s "
               "--discovery-token-ca-cert-hash %s" % (INIT_TOKEN, CA_HASH))
JOIN_COMMAND = "kubeadm join 10.1.2.3:6443 --token %s --discovery-token-ca-cert-hash %s " % (TOKEN, CA_HASH)

# Each call writes one record: its argv, then for --config=FILE the file's mode and content.
RECORDER = """#!/bin/sh
out="%s/$(basename "$0").$$"
printf 'ARGV %%s\\n' "$*" > "$out"
for a in "$@"; do
  case "$a" in --config=*) f=${a#--config=}; printf 'MODE %%s\\n' "$(stat -c %%a "$f")" >> "$out"; cat "$f" >> "$out";; esac
done
case "$*" in *"get secret kubeadm-certs"*) echo 'bootstrap-token-zz9zz9';; esac
case "$*" in *"delete secret"*) echo 'secret "kubeadm-certs" deleted';; esac
case "$*" in join*) exit %d;; esac
"""


def _run(tmp_path, join_exit=0):
    records = tmp_path / "records"
    records.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("kubeadm", "kubectl"):
        (bin_dir / name).write_text(RECORDER % (records, join_exit))
        (bin_dir / name).chmod(0o755)
    inventory = tmp_path / "hosts.yml"
    local = {"ansible_connection": "local"}
    inventory.write_text(yaml.safe_dump({"all": {"children": {
        "gpushare_control_plane": {"hosts": {
            "cp1": dict(local, __kubeadm_init={"changed": True, "rc": 0, "stdout": INIT_OUTPUT}),
            "cp2": dict(local, kubeadm_apiserver_advertise_address="10.1.2.4")}},
        "gpushare_gpu_nodes": {"hosts": {"gpu-worker1": local}}}}}))
    playbook = tmp_path / "join.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "all", "gather_facts": False,
        "environment": {"PATH": "%s:%s" % (bin_dir, os.environ["PATH"])},
        "vars": {"_kubeadm_hosts_to_join": ["cp2", "gpu-worker1"],
                 "__kubeadm_join_command": {"changed": True, "stdout": JOIN_COMMAND},
                 "__kubeadm_certificate_key": {"changed": True,
                                               "stdout_lines": ["[upload-certs] Using certificate key:", CERTIFICATE_KEY]}},
        "tasks": [{"ansible.builtin.include_role": {"name": "gpushare.cluster.kubeadm", "tasks_from": "join.yml"},
                   "vars": {"_kubeadm_join_config_path": str(tmp_path / "{{ inventory_hostname }}-join.yaml")}}]}]))
    rc, result, err = run_playbook(playbook, inventory)
    assert rc == 0, (err, result)
    calls = []
    for path in sorted(records.iterdir()):
        lines = path.read_text().splitlines()
        calls.append({"program": path.name.split(".")[0], "argv": lines[0][len("ARGV "):],
                      "mode": lines[1][len("MODE "):] if len(lines) > 1 else None,
                      "config": yaml.safe_load("\n".join(lines[2:])) if len(lines) > 2 else None})
    return calls


def test_join_gets_its_secrets_from_a_0600_file_never_argv(tmp_path):
    calls = _run(tmp_path)
    joins = [c for c in calls if c["argv"].startswith("join")]
    assert sorted(c["argv"] for c in joins) == ["join --config=%s" % (tmp_path / "cp2-join.yaml"),
                                                "join --config=%s" % (tmp_path / "gpu-worker1-join.yaml")]
    for call in calls:
        for secret in (TOKEN, TOKEN.split(".")[1], INIT_TOKEN.split(".")[1], CERTIFICATE_KEY):
            assert secret not in call["argv"], call["argv"]
    assert {c["mode"] for c in joins} == {"600"}
    by_name = {c["config"]["nodeRegistration"]["name"]: c["config"] for c in joins}
    assert by_name["gpu-worker1"]["discovery"]["bootstrapToken"] == {
        "apiServerEndpoint": "10.1.2.3:6443", "token": TOKEN, "caCertHashes": [CA_HASH]}
    assert "controlPlane" not in by_name["gpu-worker1"]
    assert by_name["cp2"]["controlPlane"] == {"certificateKey": CERTIFICATE_KEY,
                                              "localAPIEndpoint": {"advertiseAddress": "10.1.2.4", "bindPort": 6443}}
    assert by_name["cp2"]["nodeRegistration"]["criSocket"].startswith("unix:///")
    # The files are gone after the join.
    assert not list(tmp_path.glob("*-join.yaml"))


def test_the_runs_tokens_and_uploaded_certificates_are_revoked(tmp_path):
    calls = _run(tmp_path)
    revocations = sorted(c["argv"] for c in calls if not c["argv"].startswith("join"))
    # Deleted by ID (the part before the dot, not secret): the join token and kubeadm init's.
    # The uploaded certificates go with the token kubeadm made to keep their TTL (their owner).
    assert revocations == [
        "--kubeconfig=/etc/kubernetes/admin.conf -n kube-system delete secret --ignore-not-found kubeadm-certs "
        "bootstrap-token-zz9zz9",
        "--kubeconfig=/etc/kubernetes/admin.conf -n kube-system get secret kubeadm-certs --ignore-not-found "
        "-o=jsonpath={.metadata.ownerReferences[*].name}",
        "token delete abcdef qwerty"]


def test_a_failed_join_leaves_no_file_and_still_revokes(tmp_path):
    calls = _run(tmp_path, join_exit=1)
    assert not list(tmp_path.glob("*-join.yaml"))
    assert "token delete abcdef qwerty" in [c["argv"] for c in calls]
