# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Pod Security Standards' checks of a pod spec, for the unit tests: what Pod Security
admission refuses at ``baseline`` and ``restricted`` (kubernetes.io/docs/concepts/security/
pod-security-standards, and k8s.io/pod-security-admission's policy/check_*.go, latest
version). Written from the published tables, not from the code under test.
"""

from __future__ import annotations

# Baseline: capabilities a container may add.
BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
# Restricted: the only volume types allowed.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret", "image"}


def _containers(spec: dict) -> list[dict]:
    return (spec.get("containers") or []) + (spec.get("initContainers") or []) + (spec.get("ephemeralContainers") or [])


def baseline_violations(spec: dict) -> list[str]:
    out = []
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            out.append(key)
    if any("hostPath" in v for v in spec.get("volumes") or []):
        out.append("hostPath volume")
    pod_sc = spec.get("securityContext") or {}
    if (pod_sc.get("seccompProfile") or {}).get("type") == "Unconfined":
        out.append("pod seccomp Unconfined")
    if any(s["name"] not in SAFE_SYSCTLS for s in pod_sc.get("sysctls") or []):
        out.append("unsafe sysctl")
    if pod_sc.get("windowsOptions", {}).get("hostProcess"):
        out.append("hostProcess")
    for c in _containers(spec):
        sc = c.get("securityContext") or {}
        name = c.get("name")
        if sc.get("privileged"):
            out.append("%s privileged" % name)
        if set((sc.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES:
            out.append("%s adds capabilities" % name)
        if any(p.get("hostPort") for p in c.get("ports") or []):
            out.append("%s hostPort" % name)
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append("%s seccomp Unconfined" % name)
        if sc.get("procMount") not in (None, "Default"):
            out.append("%s procMount" % name)
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            out.append("%s AppArmor Unconfined" % name)
    return out


def restricted_violations(spec: dict) -> list[str]:
    out = baseline_violations(spec)
    pod_sc = spec.get("securityContext") or {}
    for v in spec.get("volumes") or []:
        if not set(v) - {"name"} <= RESTRICTED_VOLUMES:
            out.append("volume %s of a restricted type" % v.get("name"))
    if pod_sc.get("runAsUser") == 0:
        out.append("pod runAsUser 0")
    for c in _containers(spec):
        sc = c.get("securityContext") or {}
        name = c.get("name")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append("%s allowPrivilegeEscalation not false" % name)
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
            out.append("%s runAsNonRoot not true" % name)
        if sc.get("runAsUser") == 0:
            out.append("%s runAsUser 0" % name)
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append("%s seccomp %s" % (name, seccomp))
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append("%s does not drop ALL capabilities" % name)
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append("%s adds capabilities beyond NET_BIND_SERVICE" % name)
    return out


VIOLATIONS = {"baseline": baseline_violations, "restricted": restricted_violations}
