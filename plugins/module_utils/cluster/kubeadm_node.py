# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the kubeadm role, as pure functions of what the role read from the hosts.

- ``preflight_problems``: swap, kernel modules, the cgroup driver containerd really uses
  and a node name another machine holds, each as a message with the fix;
- ``redact_join_secrets``: kubeadm output with bootstrap tokens and certificate keys
  masked, so a failed init or join can be shown without leaking them;
- ``join_configuration``: the JoinConfiguration a host joins with (through a 0600 file and
  ``kubeadm join --config``, so neither the token nor the certificate key is in argv) and
  ``bootstrap_token_ids``: the IDs of the tokens a run created, which it deletes afterwards;
- ``openpgp_fingerprints``: the fingerprints of the primary keys of a downloaded repository
  signing key, which the role compares with the pinned ones before apt may trust it;
- ``bridge_cni``: the bridge/host-local CNI configuration of one node from the Node
  objects (its podCIDR) and the routes to the other nodes' pod CIDRs.

Node names come from ``model.node_name`` (the rule the Plan names nodes with).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

try:
    import tomllib
except ImportError:     # Python < 3.11 on the controller: the cgroup check reads the text
    tomllib = None

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import node_name

__all__ = ["node_name", "module_probe_paths", "preflight_problems", "redact_join_secrets", "join_configuration",
           "bootstrap_token_ids", "openpgp_fingerprints", "bridge_cni"]

# How to tell a kernel module is there, loaded or built in. Built-in modules without
# parameters have no /sys/module entry (br_netfilter on many kernels), so the two
# Kubernetes needs are probed by what they provide.
_PROVIDES = {
    "br_netfilter": "/proc/sys/net/bridge/bridge-nf-call-iptables",
    "overlay": "filesystem:overlay",
}

_CRI_RUNC_OPTIONS = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "runc", "options")
# containerd 2.x moved the runtimes under the CRI runtime plugin.
_CRI_RUNC_OPTIONS_V3 = ("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", "runc", "options")

# Bootstrap token format "[a-z0-9]{6}.[a-z0-9]{16}" (token ID, then token secret):
# https://kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/#token-format
_TOKEN = re.compile(r"\b([a-z0-9]{6})\.[a-z0-9]{16}\b")
_HEX64 = re.compile(r"\b[a-f0-9]{64}\b")


def _probe(module: str) -> str:
    return _PROVIDES.get(module, "/sys/module/%s" % module)


def module_probe_paths(modules) -> list:
    """The paths the role stats to tell whether each kernel module is there.

    A module is probed by what it provides (br_netfilter by
    /proc/sys/net/bridge/bridge-nf-call-iptables), any other by /sys/module/<name>; overlay is
    looked for in /proc/filesystems instead, so it has no path here.

    Args:
        modules: kernel module names, a list (``kubeadm_required_kernel_modules``).

    Returns:
        The paths to stat, a list of strings.
    """
    return [p for p in (_probe(m) for m in modules) if not p.startswith("filesystem:")]


def _swap_problems(host, checks, kubelet):
    devices = [line.split()[0] for line in (checks.get("swaps") or "").splitlines()[1:] if line.strip()]
    if not devices or kubelet.get("failSwapOn", True) is False:
        return []
    return ["%s: swap is on (%s) and kubelet refuses to start with swap (failSwapOn). Fix: run "
            "'swapoff -a' and comment out the swap lines of /etc/fstab (gpushare.cluster.host_prep "
            "does both with host_prep_disable_swap: true), or allow swap with kubeadm_kubelet_config: "
            "{failSwapOn: false, memorySwap: {swapBehavior: NoSwap}}." % (host, ", ".join(devices))]


def _module_problems(host, checks):
    filesystems = {line.split()[-1] for line in (checks.get("filesystems") or "").splitlines() if line.strip()}
    present = set(checks.get("present_paths") or [])
    problems = []
    for module in checks.get("required_modules") or []:
        probe = _probe(module)
        if probe.startswith("filesystem:"):
            found = probe.split(":", 1)[1] in filesystems
            what = "no %s in /proc/filesystems" % probe.split(":", 1)[1]
        else:
            found = probe in present
            what = "no %s" % probe
        if not found:
            problems.append(
                "%s: kernel module %s is not loaded (%s); containerd, kube-proxy and the CNI need it. "
                "Fix: 'modprobe %s' and list it in /etc/modules-load.d/ (gpushare.cluster.host_prep "
                "does both for host_prep_kernel_modules), or remove it from kubeadm_required_kernel_modules "
                "if this kernel provides it another way." % (host, module, what, module))
    return problems


def _runc_systemd_cgroup(dump: str):
    """SystemdCgroup of containerd's runc runtime in ``containerd config dump``, None if unset."""
    if tomllib is not None:
        try:
            config = tomllib.loads(dump)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError("cannot read 'containerd config dump' output: %s" % exc) from exc
        for path in (_CRI_RUNC_OPTIONS, _CRI_RUNC_OPTIONS_V3):
            node = config
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict) and "SystemdCgroup" in node:
                return bool(node["SystemdCgroup"])
        return None
    section = re.search(r'(?ms)^\s*\[plugins\."io\.containerd\.(?:grpc\.v1\.cri|cri\.v1\.runtime)"'
                        r'\.containerd\.runtimes\.runc\.options\](.*?)(?=^\s*\[|\Z)', dump)
    match = section and re.search(r"(?m)^\s*SystemdCgroup\s*=\s*(true|false)", section.group(1))
    return None if not match else match.group(1) == "true"


def _cgroup_problems(host, checks, kubelet):
    dump = checks.get("containerd_config_dump")
    if not dump:
        return []
    kubelet_driver = kubelet.get("cgroupDriver", "systemd")
    systemd = _runc_systemd_cgroup(dump)
    containerd_driver = "systemd" if systemd else "cgroupfs"
    if containerd_driver == kubelet_driver:
        return []
    return ["%s: containerd runs containers with the %s cgroup driver (SystemdCgroup = %s in "
            "'containerd config dump') but kubelet is configured for %s; pods would fail to start. "
            "Fix: drop the SystemdCgroup setting from the files in /etc/containerd/conf.d/ (the role's "
            "config.toml sets it to true) and restart containerd, or set kubeadm_kubelet_config."
            "cgroupDriver to %s." % (host, containerd_driver, str(bool(systemd)).lower(), kubelet_driver,
                                     containerd_driver)]


def _node_address(node):
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return address.get("address")
    return "unknown address"


def _name_problems(host, checks):
    nodes = checks.get("cluster_nodes")
    if not nodes or checks.get("is_member"):
        return []
    name = node_name(host)
    machine_id = (checks.get("machine_id") or "").strip()
    for node in nodes:
        if (node.get("metadata") or {}).get("name") != name:
            continue
        theirs = ((node.get("status") or {}).get("nodeInfo") or {}).get("machineID", "")
        if theirs and theirs == machine_id:
            return []       # this machine, rejoining after losing its kubelet.conf
        return ["%s: the Kubernetes node name %s is already taken by another machine (machine-id %s, "
                "address %s); this host (machine-id %s) is not a member and cannot join under that name. "
                "Fix: give this host an inventory name whose node name (lower case, without the domain) "
                "is free, or, when that machine is gone for good, delete its node: 'kubectl delete node %s'."
                % (host, name, theirs or "unknown", _node_address(node), machine_id or "unknown", name)]
    return []


def preflight_problems(host: str, checks: dict, kubelet_config: dict) -> list:
    """Every reason ``host`` cannot run kubelet or join, each with its fix; [] when none.

    The checks: swap on while kubelet refuses it, a required kernel module (or the overlay
    filesystem) missing, containerd's cgroup driver other than kubelet's, and the host's node
    name taken by another machine (another machine ID) when the host is not a member yet.

    Args:
        host: the inventory host name the problems are reported for.
        checks: what the role read on the host, a dict: ``swaps`` (/proc/swaps),
            ``filesystems`` (/proc/filesystems), ``required_modules`` and ``present_paths`` (the
            ``module_probe_paths`` that exist), optionally ``containerd_config_dump``, and for the
            node-name check ``cluster_nodes`` (Node objects; absent before the first init),
            ``machine_id`` and ``is_member`` (has /etc/kubernetes/kubelet.conf). Each check runs
            on the keys it needs.
        kubelet_config: the KubeletConfiguration the role gives kubelet, a dict.

    Returns:
        One message per problem, with its fix, a list of strings; empty when there is none.
    """
    if not isinstance(checks, dict):
        raise ValueError("checks must be a mapping, got %r" % (checks,))
    kubelet = kubelet_config or {}
    return (_swap_problems(host, checks, kubelet) + _module_problems(host, checks)
            + _cgroup_problems(host, checks, kubelet) + _name_problems(host, checks))


def redact_join_secrets(text) -> str:
    """``text`` with bootstrap tokens and 64-hex secrets (certificate keys) masked.

    Args:
        text: kubeadm's output, a string (none gives "").

    Returns:
        The text with each bootstrap token replaced by ``<token>`` and each 64-hex-digit secret by
        ``<redacted>``, a string.
    """
    text = _TOKEN.sub("<token>", str(text or ""))
    return _HEX64.sub("<redacted>", text)


def _join_command_parts(join_command: str) -> dict:
    """Endpoint, token and CA hashes of ``kubeadm token create --print-join-command``'s line."""
    words = str(join_command or "").split()
    if words[:2] != ["kubeadm", "join"]:
        raise ValueError("not a kubeadm join command (from 'kubeadm token create --print-join-command'): %r"
                         % redact_join_secrets(join_command))
    parts = {"endpoint": None, "token": None, "ca_hashes": []}
    rest = iter(words[2:])
    for word in rest:
        if word == "--token":
            parts["token"] = next(rest, None)
        elif word == "--discovery-token-ca-cert-hash":
            parts["ca_hashes"].append(next(rest, None))
        elif not word.startswith("-") and parts["endpoint"] is None:
            parts["endpoint"] = word
    if not (parts["endpoint"] and parts["token"] and _TOKEN.fullmatch(parts["token"]) and parts["ca_hashes"]
            and all(parts["ca_hashes"])):
        raise ValueError("the kubeadm join command lacks the API server endpoint, a bootstrap token or a "
                         "--discovery-token-ca-cert-hash: %r" % redact_join_secrets(join_command))
    return parts


def join_configuration(join_command: str, node: str, cri_socket: str, certificate_key: str = "",
                       advertise_address: str = "", bind_port: int = 6443, ignore_preflight_errors=()) -> dict:
    """The kubeadm JoinConfiguration (v1beta4) one host joins with.

    The role writes it to a file of mode 0600 on the host and runs ``kubeadm join --config``, so
    the bootstrap token and the certificate key never appear in a process's arguments (``ps``,
    auditd) and the file is removed after the join.

    Args:
        join_command: the line ``kubeadm token create --print-join-command`` printed.
        node: the Kubernetes node name of the joining host.
        cri_socket: containerd's socket path (without ``unix://``).
        certificate_key: the key ``kubeadm init phase upload-certs --upload-certs`` printed; given
            only for a control-plane host, which then joins as one.
        advertise_address: the control-plane host's API server address (control planes only).
        bind_port: the API server port of a joining control plane.
        ignore_preflight_errors: kubeadm preflight checks to downgrade to warnings, a list.

    Returns:
        The JoinConfiguration as a dict: ``discovery.bootstrapToken`` (endpoint, token, CA
        hashes), ``nodeRegistration`` (name, CRI socket, ignored preflight errors) and, with a
        certificate key, ``controlPlane``.
    """
    parts = _join_command_parts(join_command)
    registration = {"name": node, "criSocket": "unix://" + cri_socket}
    if ignore_preflight_errors:
        registration["ignorePreflightErrors"] = list(ignore_preflight_errors)
    config = {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "JoinConfiguration",
        "discovery": {"bootstrapToken": {"apiServerEndpoint": parts["endpoint"], "token": parts["token"],
                                         "caCertHashes": parts["ca_hashes"]}},
        "nodeRegistration": registration,
    }
    if certificate_key:
        key = str(certificate_key).strip()
        if not _HEX64.fullmatch(key):
            raise ValueError("the certificate key from 'kubeadm init phase upload-certs' is not 64 hex digits "
                             "(got %d characters)" % len(key))
        config["controlPlane"] = {"certificateKey": key,
                                  "localAPIEndpoint": {"advertiseAddress": advertise_address,
                                                       "bindPort": int(bind_port)}}
    return config


def bootstrap_token_ids(texts) -> list:
    """The IDs of the bootstrap tokens in kubeadm's output, to delete them after the joins.

    The ID (the six characters before the dot) names a token for ``kubeadm token delete``
    without its secret part, so deleting puts no secret in argv.

    Args:
        texts: kubeadm outputs, a list of strings (none or empty entries are skipped), e.g. the
            ``kubeadm init`` output and the join command.

    Returns:
        The token IDs, sorted and unique, a list of strings.
    """
    return sorted({match.group(1) for text in texts or [] for match in _TOKEN.finditer(str(text or ""))})


def _dearmor(data: bytes) -> bytes:
    if not data.lstrip().startswith(b"-----BEGIN PGP"):
        return data
    lines = data.decode("ascii", "replace").splitlines()
    body, in_block, in_headers = [], False, False
    for line in lines:
        line = line.strip()
        if line.startswith("-----BEGIN PGP"):
            in_block, in_headers = True, True
        elif line.startswith("-----END PGP"):
            break
        elif in_block and in_headers:
            in_headers = line != "" and ":" in line
            if not in_headers and line:
                body.append(line)
        elif in_block and line and not line.startswith("="):
            body.append(line)
    try:
        return base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("the OpenPGP armor does not hold base64: %s" % exc) from exc


def _packets(data: bytes):
    """(tag, body) of each OpenPGP packet (RFC 9580 section 4.2, old and new formats)."""
    at = 0
    while at < len(data):
        head = data[at]
        if not head & 0x80:
            raise ValueError("not an OpenPGP packet at byte %d" % at)
        if head & 0x40:
            tag, first = head & 0x3F, data[at + 1]
            if first < 192:
                length, at = first, at + 2
            elif first < 224:
                length, at = ((first - 192) << 8) + data[at + 2] + 192, at + 3
            elif first == 255:
                length, at = int.from_bytes(data[at + 2:at + 6], "big"), at + 6
            else:
                raise ValueError("partial-length packet in a key (byte %d)" % at)
        else:
            tag, kind = (head >> 2) & 0x0F, head & 0x03
            if kind == 3:
                length, at = len(data) - at - 1, at + 1
            else:
                size = (1, 2, 4)[kind]
                length, at = int.from_bytes(data[at + 1:at + 1 + size], "big"), at + 1 + size
        yield tag, data[at:at + length]
        at += length


def openpgp_fingerprints(content: str) -> list:
    """The fingerprints of the primary public keys in a signing key file.

    Computed as RFC 9580 section 5.5.4 says: version 4 keys SHA-1 over 0x99, the two-octet
    length and the key packet's body; version 6 keys SHA-256 over 0x9B, a four-octet length and
    the body. Subkeys are not listed (a repository pins its primary key).

    Args:
        content: the key file, base64-encoded as ``ansible.builtin.slurp`` returns it; armored
            (``-----BEGIN PGP PUBLIC KEY BLOCK-----``) or binary.

    Returns:
        Upper-case hexadecimal fingerprints, a list of strings.
    """
    try:
        data = base64.b64decode(str(content or ""), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("the key file content is not base64 (give the slurp module's content): %s" % exc) from exc
    fingerprints = []
    for tag, body in _packets(_dearmor(data)):
        if tag != 6 or not body:
            continue
        if body[0] == 4:
            digest = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False)
        elif body[0] == 6:
            digest = hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body)
        else:
            raise ValueError("OpenPGP key version %d is not supported (4 and 6 are)" % body[0])
        fingerprints.append(digest.hexdigest().upper())
    if not fingerprints:
        raise ValueError("the file holds no OpenPGP public key")
    return fingerprints


def bridge_cni(nodes, name: str, network: str = "gpushare-bridge", bridge: str = "cni0") -> dict:
    """The bridge CNI configuration of node ``name`` and its routes to the other nodes' pods.

    Each node's pods get addresses from its own podCIDR (host-local); traffic to another
    node's pods is routed to that node's InternalIP, so the nodes must share one L2
    network or routed subnet.

    Args:
        nodes: the cluster's Node objects, one list (a kubernetes.core.k8s_info result's
            ``resources``); the node ``name`` must be among them with a ``spec.podCIDR``.
        name: the Kubernetes node name of the node to configure.
        network: the network name in the CNI configuration.
        bridge: the Linux bridge the pods attach to.

    Returns:
        A dict: ``conflist`` (the CNI configuration list: bridge with host-local addresses from
        the node's podCIDR, and portmap) and ``routes`` (``{dest, via}``: each other node's podCIDR
        via its InternalIP).
    """
    by_name = {(n.get("metadata") or {}).get("name"): n for n in nodes or []}
    node = by_name.get(name)
    if node is None:
        raise ValueError("node %s is not in the cluster (nodes: %s); it has to join before its CNI "
                         "configuration can be written" % (name, ", ".join(sorted(k for k in by_name if k))))
    cidr = (node.get("spec") or {}).get("podCIDR")
    if not cidr:
        raise ValueError("node %s has no spec.podCIDR; the bridge CNI needs the controller-manager to "
                         "allocate node CIDRs: set kubeadm_pod_subnet (it is passed to kubeadm as "
                         "networking.podSubnet)" % name)
    conflist = {
        "cniVersion": "1.0.0",
        "name": network,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": True, "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": cidr}]], "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    routes = []
    for other_name in sorted(k for k in by_name if k and k != name):
        other = by_name[other_name]
        other_cidr = (other.get("spec") or {}).get("podCIDR")
        address = _node_address(other)
        if other_cidr and address != "unknown address":
            routes.append({"dest": other_cidr, "via": address})
    return {"conflist": conflist, "routes": routes}
