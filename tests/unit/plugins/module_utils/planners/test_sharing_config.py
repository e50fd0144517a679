# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device plugin's sharing decision for one node, case by case, with the answers written
out by hand from the upstream formats.

Sources: NVIDIA/k8s-device-plugin README ("Shared Access to GPUs", "Configuration File":
``version: v1``, ``flags.migStrategy``, ``sharing.timeSlicing`` / ``sharing.mps`` with
``renameByDefault``, ``failRequestsGreaterThanOne`` and ``resources[].replicas``); the NVIDIA
MIG User Guide's profile tables (H200: the whole card is ``7g.141gb``; A30: ``4g.24gb``; the
L40S is not in the supported-GPU list).
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.sharing_planner import (
    advertised, device_plugin_config, full_profile, node_sharing)


def test_the_whole_card_profile_from_the_mig_tables():
    assert full_profile(CATALOG["h200-141gb"]) == "7g.141gb"
    assert full_profile(CATALOG["a30"]) == "4g.24gb"
    assert full_profile(CATALOG["l40s"]) is None


def test_one_time_sliced_card_among_whole_ones_is_a_time_sliced_full_mig_instance():
    sharing = node_sharing("h200-141gb", {0: "whole", 1: "whole", 2: "timeslice", 3: "whole"},
                           {0: 1, 1: 1, 2: 4, 3: 1})
    assert (sharing.method, sharing.resource, sharing.replicas, sharing.gpus) == \
        ("timeSlicing", "nvidia.com/mig-7g.141gb", 4, (2,))
    assert sharing.via_mig
    assert sharing.shared_resource == "nvidia.com/mig-7g.141gb.shared"
    # The node has MIG devices (the full instance), so the strategy is mixed.
    assert device_plugin_config(sharing, mig=True) == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},
        "sharing": {"timeSlicing": {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                                    "resources": [{"name": "nvidia.com/mig-7g.141gb", "replicas": 4}]}},
    }
    # 3 whole cards stay nvidia.com/gpu; the sliced card's one instance is 4 replicas.
    assert advertised(3, ["7g.141gb"], "h200-141gb", sharing) == {
        "nvidia.com/gpu": 3, "nvidia.com/mig-7g.141gb.shared": 4}


def test_every_card_time_sliced_shares_nvidia_com_gpu_without_mig():
    sharing = node_sharing("h200-141gb", {0: "timeslice"}, {0: 5})
    assert (sharing.method, sharing.resource, sharing.replicas, sharing.gpus) == \
        ("timeSlicing", "nvidia.com/gpu", 5, (0,))
    assert not sharing.via_mig
    assert device_plugin_config(sharing, mig=False) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {"timeSlicing": {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                                    "resources": [{"name": "nvidia.com/gpu", "replicas": 5}]}},
    }


def test_a_card_without_mig_time_slices_nvidia_com_gpu():
    sharing = node_sharing("l40s", {0: "timeslice", 1: "whole"}, {0: 3, 1: 1})
    assert (sharing.method, sharing.resource, sharing.replicas, sharing.gpus) == \
        ("timeSlicing", "nvidia.com/gpu", 3, (0,))
    assert not sharing.via_mig


def test_mps_on_a_one_card_node():
    sharing = node_sharing("l40s", {0: "mps"}, {0: 6})
    assert (sharing.method, sharing.resource, sharing.replicas, sharing.gpus) == ("mps", "nvidia.com/gpu", 6, (0,))
    assert not sharing.via_mig
    # failRequestsGreaterThanOne under mps too: the device plugin forces it for MPS
    # (k8s-device-plugin api/config/v1/config.go), so the config says what runs.
    assert device_plugin_config(sharing, mig=False) == {
        "version": "v1", "flags": {"migStrategy": "none"},
        "sharing": {"mps": {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                            "resources": [{"name": "nvidia.com/gpu", "replicas": 6}]}},
    }


def test_no_shared_card_no_sharing_section():
    sharing = node_sharing("h200-141gb", {0: "whole", 1: "mig"}, {0: 1, 1: 1})
    assert (sharing.method, sharing.resource, sharing.replicas, sharing.gpus) == (None, None, None, ())
    assert not sharing.via_mig
    assert device_plugin_config(sharing, mig=True) == {"version": "v1", "flags": {"migStrategy": "mixed"}}


def test_each_mig_instance_is_one_resource_of_its_profile():
    # One whole H200 and one cut 3g.71gb + 2g.35gb + 2g.35gb (a valid H200 layout: 4 + 2 + 2 of the
    # 8 memory slices); under the mixed strategy each instance is one nvidia.com/mig-<profile>.
    no_sharing = node_sharing("h200-141gb", {0: "whole", 1: "mig"}, {0: 1, 1: 1})
    assert advertised(1, ["3g.71gb", "2g.35gb", "2g.35gb"], "h200-141gb", no_sharing) == {
        "nvidia.com/gpu": 1, "nvidia.com/mig-2g.35gb": 2, "nvidia.com/mig-3g.71gb": 1}


def test_shared_cards_that_are_not_there_advertise_no_replicas():
    # Every card of the time-sliced resource gone (e.g. the node's only card cut into slices for
    # a window): 0 cards x 4 replicas.
    sharing = node_sharing("h200-141gb", {0: "timeslice"}, {0: 4})
    assert advertised(0, ["7g.141gb"], "h200-141gb", sharing) == {
        "nvidia.com/gpu.shared": 0, "nvidia.com/mig-7g.141gb": 1}
