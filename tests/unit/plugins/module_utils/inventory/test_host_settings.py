# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_prep's settings checked whole (plugins/module_utils/inventory/host_settings.py) and its
firewall sources. The bad values are the injections each file format would accept: a newline
that starts a second apt.conf or .repo line, a quote that ends an apt.conf string, a space that
adds a deb822 URI, a trailing path after a proxy's host."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.filter.__host_prep import FilterModule
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.host_settings import (
    firewall_sources, host_prep_problems)

FILTERS = FilterModule().filters()

GOOD = {
    "host_prep_os_mirror_url": "https://mirror.example.com/ubuntu",
    "host_prep_os_security_mirror_url": "",
    "host_prep_http_proxy": "http://proxy.example.com:3128",
    "host_prep_https_proxy": "http://user:s3cret@proxy.example.com:3128/",
    "host_prep_package_proxy_direct_hosts": ["mirror.example.com", "10.0.0.5"],
    "host_prep_chrony_servers": ["ntp1.example.com"],
    "host_prep_kernel_modules": ["overlay", "br_netfilter"],
    "host_prep_sysctl": {"net.ipv4.ip_forward": 1, "net.ipv4.ip_local_port_range": "32768 60999"},
    "host_prep_packages": ["nvme-cli", "kubelet=1.35.4-*"],
    "host_prep_firewalld_zone": "public",
    "host_prep_firewall_sources": ["10.0.0.0/24", "192.0.2.7", "2001:db8::/64"],
}


def test_good_settings_have_no_problem():
    assert host_prep_problems(GOOD) == []


@pytest.mark.parametrize("name, value, says", [
    ("host_prep_os_mirror_url", "http://mirror.example.com/ubuntu", "is http://; package repositories are fetched over https:// only"),
    ("host_prep_os_mirror_url", "https://mirror.example.com/ubuntu\nTypes: deb", "is not a whole https:// URL"),
    ("host_prep_os_mirror_url", "https://mirror.example.com/ubuntu https://evil.example.com/", "is not a whole https:// URL"),
    ("host_prep_os_mirror_url", "https://mirror.example.com/ubuntu#x", "is not a whole https:// URL"),
    ("host_prep_os_security_mirror_url", "ftp://mirror.example.com/", "is not a whole https:// URL"),
    ("host_prep_http_proxy", 'http://proxy:3128";\nAcquire::https::Verify-Peer "false', "is not a whole proxy URL"),
    ("host_prep_https_proxy", "http://proxy:3128/path", "is not a whole proxy URL"),
    ("host_prep_package_proxy_direct_hosts", ["mirror.example.com\" \"DIRECT"], "[0]: 'mirror.example.com\" \"DIRECT' is not a host name"),
    ("host_prep_chrony_servers", ["ntp.example.com iburst\nserver evil.example.com"], "is not a host name or address"),
    ("host_prep_kernel_modules", ["overlay\nevil"], "is not a kernel module name"),
    ("host_prep_sysctl", {"net.ipv4.ip_forward\nkernel.x": 1}, "is not a sysctl name"),
    ("host_prep_sysctl", {"net.ipv4.ip_forward": "1\nkernel.modules_disabled = 1"}, "is not a sysctl value"),
    ("host_prep_packages", ["-o=Dpkg::Options::=--force-confnew"], "is not a package name"),
    ("host_prep_firewalld_zone", "public --add-service=ssh", "is not a firewalld zone name"),
    ("host_prep_firewall_sources", ["0.0.0.0/0 evil"], "is not an IP address or network"),
])
def test_each_injection_is_refused_naming_the_variable_and_the_value(name, value, says):
    problems = host_prep_problems(dict(GOOD, **{name: value}))
    assert len(problems) == 1, problems
    assert problems[0].startswith(name) and says in problems[0] and "Fix: " in problems[0], problems[0]
    assert repr(value if not isinstance(value, list) else value[0])[:20] in problems[0] or isinstance(value, dict)


def test_http_mirrors_only_with_the_testing_switch():
    http = dict(GOOD, host_prep_os_mirror_url="http://deb.debian.org/debian")
    assert host_prep_problems(http) != []
    assert host_prep_problems(dict(http, host_prep_allow_http_repositories_for_testing=True)) == []
    assert host_prep_problems(dict(http, host_prep_allow_http_repositories_for_testing="true")) != []
    assert FILTERS["host_prep_problems"](http)[0].startswith("host_prep_os_mirror_url: 'http://deb.debian.org/debian'")


def test_default_sources_are_every_address_of_the_cluster_hosts():
    addresses = {"cp1": ["10.0.0.1", "172.17.0.1", "fe80::1", "127.0.0.1"], "gpu01": ["10.0.0.2"],
                 "gpu02": ["10.0.0.2"]}
    assert firewall_sources([], addresses) == ["10.0.0.1/32", "10.0.0.2/32", "172.17.0.1/32"]


def test_configured_sources_win_and_are_checked():
    assert firewall_sources(["10.0.0.0/24", "10.0.0.7"], {"cp1": []}) == ["10.0.0.0/24", "10.0.0.7/32"]
    with pytest.raises(ValueError, match=r"host_prep_firewall_sources\[0\]: 'anywhere' is not an IP"):
        firewall_sources(["anywhere"], {})


def test_a_host_without_an_address_is_named_with_the_fix():
    with pytest.raises(ValueError, match="host gpu02: no address is known.*without --limit.*host_prep_firewall_sources"):
        firewall_sources([], {"cp1": ["10.0.0.1"], "gpu02": ["gpu02.lab.example"]})


class _HostVars(dict):
    """hostvars as Ansible hands them: per host a mapping, facts under ansible_facts."""


def test_the_filter_reads_facts_or_ansible_host():
    hostvars = _HostVars(cp1={"ansible_facts": {"all_ipv4_addresses": ["10.0.0.1"], "all_ipv6_addresses": []}},
                         gpu01={"ansible_host": "10.0.0.9"})
    assert FILTERS["firewall_sources"]([], ["cp1", "gpu01"], hostvars) == ["10.0.0.1/32", "10.0.0.9/32"]


def test_repository_urls_are_whole_https_urls():
    from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.host_settings import repository_url_problems
    urls = {"kubeadm_repo_base_url": "https://pkgs.k8s.io/core:/stable:/v1.35",
            "kubeadm_containerd_rpm_repo_url": "https://download.docker.com/linux/centos/$releasever/$basearch/stable",
            "kubeadm_containerd_rpm_key_url": ""}
    assert repository_url_problems(urls) == []
    http = dict(urls, kubeadm_repo_base_url="http://127.0.0.1:8080/core:/stable:/v1.35")
    assert [p.split(":")[0] for p in repository_url_problems(http)] == ["kubeadm_repo_base_url"]
    assert repository_url_problems(http, allow_http=True) == []
    injected = dict(urls, kubeadm_repo_base_url="https://pkgs.k8s.io/x/\nTypes: deb")
    assert "is not a whole http(s):// URL" in FILTERS["repository_url_problems"](injected, True)[0]


def test_a_refused_proxy_url_is_shown_without_its_password():
    problems = host_prep_problems(dict(GOOD, host_prep_https_proxy="http://user:s3cret@proxy.example.com:3128/x\n"))
    assert len(problems) == 1 and "s3cret" not in problems[0] and "<userinfo>@proxy.example.com" in problems[0]
