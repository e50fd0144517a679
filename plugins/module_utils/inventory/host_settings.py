# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host_prep role's inputs, checked whole before anything is written, and its firewall sources.

- ``host_prep_problems``: every mirror, proxy, host name, kernel module, sysctl and package
  setting matched in full (an anchored pattern, so no newline, quote or space can carry a second
  line or option into apt.conf, a deb822 or .repo file, chrony.conf or sysctl.d), package
  repository base URLs only over https; each problem names the variable, the value and the fix;
- ``repository_url_problems``: package repository and key URLs of the Kubernetes roles, https only;
- ``firewall_sources``: the addresses allowed to reach the cluster ports: the inventory's
  ``host_prep_firewall_sources``, or by default every address of the cluster's own hosts.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["host_prep_problems", "repository_url_problems", "firewall_sources"]

# A host name or address as it may appear in a URL or configuration line: DNS labels, IPv4, or
# an IPv6 literal in brackets.
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])"
# Path characters of a repository URL (RFC 3986 unreserved, sub-delims without quotes, ':@/%').
_PATH = r"(?:/[A-Za-z0-9._~!$&()*+,;=:@%/-]*)?"
_URL = {scheme: re.compile(r"%s://%s(?::[0-9]{1,5})?%s" % (scheme, _HOST, _PATH))
        for scheme in ("https", "http")}
# A proxy may carry credentials (user:password@); apt and dnf accept them there.
_PROXY = re.compile(r"https?://(?:[A-Za-z0-9._~%%!$&*+,;=-]+(?::[A-Za-z0-9._~%%!$&*+,;=-]*)?@)?%s(?::[0-9]{1,5})?/?"
                    % _HOST)
_HOST_ONLY = re.compile(_HOST)
_MODULE = re.compile(r"[A-Za-z0-9_-]+")
_SYSCTL_KEY = re.compile(r"[A-Za-z0-9_-]+(?:[./][A-Za-z0-9_-]+)+")
_SYSCTL_VALUE = re.compile(r"[A-Za-z0-9_.:-]+(?: [A-Za-z0-9_.:-]+)*")
# Debian and RPM package names, with an optional version (=1.2-3, -1.2.3).
_PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9+._:=~*-]*")
_ZONE = re.compile(r"[A-Za-z0-9_-]{1,17}")


_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


def _show(value) -> str:
    """The value for a message, without the userinfo (user:password@) of a URL in it."""
    return repr(_USERINFO.sub("<userinfo>@", value) if isinstance(value, str) else value)


def _url_problems(name: str, value, https_only: bool) -> list:
    if value in (None, ""):
        return []
    if not isinstance(value, str):
        return ["%s must be a URL string (got %s)" % (name, _show(value))]
    if https_only and _URL["http"].fullmatch(value):
        return ["%s: %s is http://; package repositories are fetched over https:// only (a mirror or proxy on the "
                "path could change what is installed). Fix: serve the mirror over https and give its https:// URL"
                % (name, _show(value))]
    if not _URL["https"].fullmatch(value) and not (not https_only and _URL["http"].fullmatch(value)):
        return ["%s: %s is not a whole %s URL (scheme, host, optional port and path; no spaces, quotes, newlines "
                "or '#', which would end up in the repository files). Fix: give e.g. "
                "https://mirror.example.com/ubuntu" % (name, _show(value), "https://" if https_only else "http(s)://")]
    return []


def _each(name: str, values, pattern, what: str, example: str) -> list:
    if values in (None, ""):
        return []
    if not isinstance(values, list):
        return ["%s must be a list (got %s)" % (name, _show(values))]
    return ["%s[%d]: %s is not %s (matched whole: no spaces, quotes or newlines). Fix: e.g. %s"
            % (name, i, _show(v), what, example)
            for i, v in enumerate(values) if not (isinstance(v, str) and pattern.fullmatch(v))]


def _sources_problems(sources) -> list:
    if not isinstance(sources, list):
        return ["host_prep_firewall_sources must be a list of addresses or networks (got %s)" % _show(sources)]
    problems = []
    for i, source in enumerate(sources):
        try:
            ipaddress.ip_network(str(source), strict=False)
            if not isinstance(source, str) or source != source.strip():
                raise ValueError(source)
        except ValueError:
            problems.append("host_prep_firewall_sources[%d]: %s is not an IP address or network. Fix: e.g. "
                            "10.0.0.0/24 or 192.0.2.7" % (i, _show(source)))
    return problems


def host_prep_problems(settings: dict) -> list:
    """Every problem of the host_prep settings that go into configuration files; [] when none.

    Args:
        settings: the role's variables, a dict: ``host_prep_os_mirror_url``,
            ``host_prep_os_security_mirror_url`` (https only), ``host_prep_http_proxy``,
            ``host_prep_https_proxy``, ``host_prep_package_proxy_direct_hosts``,
            ``host_prep_chrony_servers``, ``host_prep_kernel_modules``, ``host_prep_sysctl``,
            ``host_prep_packages``, ``host_prep_firewalld_zone`` and ``host_prep_firewall_sources``;
            a missing key is not checked. ``host_prep_allow_http_repositories_for_testing`` true
            (Molecule's local mirrors only) accepts http:// mirrors.

    Returns:
        One message per problem naming the variable, the value and the fix, a list of strings.
    """
    s = settings or {}
    problems = []
    https_only = s.get("host_prep_allow_http_repositories_for_testing") is not True
    for name in ("host_prep_os_mirror_url", "host_prep_os_security_mirror_url"):
        problems += _url_problems(name, s.get(name), https_only=https_only)
    for name in ("host_prep_http_proxy", "host_prep_https_proxy"):
        value = s.get(name)
        if value not in (None, "") and not (isinstance(value, str) and _PROXY.fullmatch(value)):
            problems.append("%s: %s is not a whole proxy URL (http(s)://[user:password@]host[:port], nothing after "
                            "it; no spaces, quotes or newlines, which would end up in apt.conf or dnf.conf). Fix: "
                            "e.g. http://proxy.example.com:3128" % (name, _show(value)))
    problems += _each("host_prep_package_proxy_direct_hosts", s.get("host_prep_package_proxy_direct_hosts"),
                      _HOST_ONLY, "a host name or address", "mirror.example.com")
    problems += _each("host_prep_chrony_servers", s.get("host_prep_chrony_servers"), _HOST_ONLY,
                      "a host name or address", "ntp1.example.com")
    problems += _each("host_prep_kernel_modules", s.get("host_prep_kernel_modules"), _MODULE,
                      "a kernel module name", "br_netfilter")
    problems += _each("host_prep_packages", s.get("host_prep_packages"), _PACKAGE, "a package name", "nvme-cli")
    sysctl = s.get("host_prep_sysctl")
    if sysctl not in (None, ""):
        if not isinstance(sysctl, dict):
            problems.append("host_prep_sysctl must be a mapping of key to value (got %s)" % _show(sysctl))
        else:
            for key, value in sysctl.items():
                if not (isinstance(key, str) and _SYSCTL_KEY.fullmatch(key)):
                    problems.append("host_prep_sysctl: key %s is not a sysctl name. Fix: e.g. net.ipv4.ip_forward"
                                    % _show(key))
                if isinstance(value, bool) or not _SYSCTL_VALUE.fullmatch(str(value)):
                    problems.append("host_prep_sysctl[%s]: %s is not a sysctl value (numbers or words separated by "
                                    "single spaces). Fix: e.g. 1" % (key, _show(value)))
    zone = s.get("host_prep_firewalld_zone")
    if zone not in (None, "") and not (isinstance(zone, str) and _ZONE.fullmatch(zone)):
        problems.append("host_prep_firewalld_zone: %s is not a firewalld zone name. Fix: e.g. public" % _show(zone))
    if "host_prep_firewall_sources" in s:
        problems += _sources_problems(s["host_prep_firewall_sources"])
    return problems


def repository_url_problems(urls: dict, allow_http: bool = False) -> list:
    """Package repository and signing key URLs, each a whole https:// URL.

    Args:
        urls: variable name to URL, a dict (an empty URL is not checked).
        allow_http: accept http:// too (Molecule's and the kubeadm suite's local stand-ins only).

    Returns:
        One message per problem naming the variable, the value and the fix, a list of strings.
    """
    return [p for name, url in sorted((urls or {}).items()) for p in _url_problems(name, url, https_only=not allow_http)]


def firewall_sources(configured, host_addresses: dict) -> list:
    """The networks allowed to reach the Kubernetes ports host_prep opens.

    Args:
        configured: ``host_prep_firewall_sources``, a list of addresses or networks; empty means
            the cluster's own hosts.
        host_addresses: each cluster host's addresses, a dict of host name to a list of strings
            (its facts' IPv4 and IPv6 addresses, or its ``ansible_host`` when that is an address).

    Returns:
        The sources, sorted and unique, as networks (a single address as /32 or /128), a list
        of strings.

    Raises:
        ValueError: a configured source is not an address or network, or a cluster host has no
            address to allow (no facts and an ``ansible_host`` that is a name).
    """
    if configured:
        problems = _sources_problems(configured)
        if problems:
            raise ValueError("; ".join(problems))
        networks = {ipaddress.ip_network(s, strict=False) for s in configured}
    else:
        networks = set()
        for host, addresses in sorted((host_addresses or {}).items()):
            found = set()
            for address in addresses or []:
                try:
                    found.add(ipaddress.ip_network(str(address).split("%", maxsplit=1)[0], strict=False))
                except ValueError:
                    continue
            found = {n for n in found if not (n.is_loopback or n.is_link_local)}
            if not found:
                raise ValueError("host %s: no address is known to allow through the firewall (no gathered facts, and "
                                 "its ansible_host is not an IP address). Fix: run without --limit so its facts are "
                                 "gathered, or set host_prep_firewall_sources to the cluster's networks (e.g. "
                                 "10.0.0.0/24)" % host)
            networks |= found
    return [str(n) for n in sorted(networks, key=lambda n: (n.version, n))]
