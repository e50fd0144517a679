#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Detect the NVIDIA GPUs of a host and map them to the gpushare GPU catalogue
version_added: "0.1.0"
description:
  - Runs one read-only query, C(nvidia-smi --query-gpu=... --format=csv,noheader,nounits),
    on the target host and returns one entry per GPU with its catalogue model key.
  - Changes nothing on the host. It never enables or disables MIG, never changes clocks,
    power limits, persistence or compute mode.
  - When C(nvidia-smi) is not installed the module succeeds with an empty GPU list and
    RV(host_driver.installed=false). When C(nvidia-smi) is installed but fails (for example
    the kernel module is not loaded) it also succeeds with an empty list, reports
    RV(host_driver.installed=false) and adds a warning with the error text.
  - GPUs whose PCI device id and name are not in the catalogue are returned with
    C(model=null) and a warning.
author:
  - gpushare.cluster contributors (!UNKNOWN)
options:
  nvidia_smi_path:
    description:
      - Name or path of the C(nvidia-smi) binary. A bare name is searched in E(PATH)
        and the usual system directories.
    type: str
    default: nvidia-smi
  expect:
    description:
      - The host's inventory entry (C(gpushare_node)). When given, the module fails with
        one message per contradiction when the hardware disagrees with it - C(gpu_model)
        (catalogue key, alias, name or PCI id), C(gpu_count) and C(host_driver).
      - Model and count are only compared when a working driver answers; without one only
        C(host_driver=true) is checked (the GPU Operator installs the driver later).
    type: dict
    suboptions:
      gpu_model:
        description: GPU model every GPU of the host must be.
        type: str
      gpu_count:
        description: Number of GPUs nvidia-smi must list.
        type: int
      host_driver:
        description: Whether a driver installed on the host (not by the GPU Operator) must answer.
        type: bool
        default: false
attributes:
  check_mode:
    support: full
    description: The module only reads, so it runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
  facts:
    support: full
    description: Sets RV(ansible_facts.gpushare_gpus_detected).
notes:
  - The PCI device id is taken from the upper 16 bits of C(pci.device_id) (C(0x233510DE)
    becomes C(0x2335)); the catalogue is searched by that id first, then by the name.
  - Requires an NVIDIA driver that supports the C(mig.mode.*) and C(compute_cap) query
    fields (R510 and later).
seealso:
  - name: nvidia-smi documentation
    description: The query fields used, listed by C(nvidia-smi --help-query-gpu).
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Detect the GPUs of every GPU server
  gpushare.cluster.gpu_facts:

- name: Use a driver installed outside PATH
  gpushare.cluster.gpu_facts:
    nvidia_smi_path: /usr/local/nvidia/bin/nvidia-smi
  register: detected

- name: Fail when the host's GPUs or driver are not what the inventory says
  gpushare.cluster.gpu_facts:
    expect:
      gpu_model: "{{ gpushare_node.gpu_model }}"
      gpu_count: "{{ gpushare_node.gpu_count }}"
      host_driver: "{{ gpushare_node.host_driver | default(false) }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpushare_gpus_detected:
      description: One entry per GPU, in nvidia-smi index order; empty when no driver is usable.
      returned: always
      type: list
      elements: dict
      contains:
        index:
          description: nvidia-smi GPU index.
          type: int
          sample: 0
        name:
          description: Product name as nvidia-smi reports it.
          type: str
          sample: NVIDIA H200
        model:
          description: The gpushare catalogue key of this GPU, or null if the catalogue does not know it.
          type: str
          sample: h200-141gb
        pci_device_id:
          description: 16-bit PCI device id.
          type: str
          sample: "0x2335"
        bus_id:
          description: PCI bus id.
          type: str
          sample: "00000000:00:06.0"
        memory_total_mib:
          description: Total memory in MiB as nvidia-smi reports it.
          type: int
          sample: 143771
        driver_version:
          description: Driver version.
          type: str
          sample: 580.159.04
        mig_mode_current:
          description: Whether MIG is enabled now; null on GPUs without MIG support.
          type: bool
          sample: false
        mig_mode_pending:
          description: The MIG mode after the next GPU reset; null on GPUs without MIG support.
          type: bool
          sample: false
        uuid:
          description: GPU UUID.
          type: str
          sample: GPU-00000000-0000-0000-0000-000000000001
        compute_cap:
          description: CUDA compute capability.
          type: str
          sample: "9.0"
host_driver:
  description: Whether a working NVIDIA driver (nvidia-smi) is installed on the host, and its version.
  returned: always
  type: dict
  contains:
    installed:
      description: True when nvidia-smi was found and answered the query.
      type: bool
      sample: true
    version:
      description: Driver version, null when not installed or when no GPU was listed.
      type: str
      sample: 580.159.04
mismatches:
  description: On failure with O(expect), one message per contradiction with the inventory entry.
  returned: failed
  type: list
  elements: str
  sample: ["gpushare_node.gpu_count is 4 but nvidia-smi lists 2 GPU(s): 0 NVIDIA H200, 1 NVIDIA H200; set gpu_count: 2"]
nvidia_smi:
  description: Path of the nvidia-smi binary that was run, null when none was found.
  returned: always
  type: str
  sample: /usr/bin/nvidia-smi
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_facts import (
    inventory_mismatches,
    model_key,
    parse_query_gpu_csv,
    query_gpu_args,
)


def _find(module, name):
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return module.get_bin_path(name, required=False)


def _finish(module, result):
    """Exit, or fail naming every contradiction with the inventory entry given as ``expect``."""
    expected = module.params["expect"]
    if expected is not None:
        problems = inventory_mismatches(expected, result["ansible_facts"]["gpushare_gpus_detected"],
                                        result["host_driver"]["installed"])
        if problems:
            module.fail_json(msg="The host does not match its inventory entry: " + "; ".join(problems),
                             mismatches=problems, **result)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="str", default="nvidia-smi"),
            expect=dict(type="dict", options=dict(
                gpu_model=dict(type="str"),
                gpu_count=dict(type="int"),
                host_driver=dict(type="bool", default=False),
            )),
        ),
        supports_check_mode=True,
    )
    result = dict(changed=False, nvidia_smi=None,
                  host_driver=dict(installed=False, version=None),
                  ansible_facts=dict(gpushare_gpus_detected=[]))

    binary = _find(module, module.params["nvidia_smi_path"])
    if binary is None:
        _finish(module, result)
    result["nvidia_smi"] = binary

    rc, out, err = module.run_command(query_gpu_args(binary), check_rc=False,
                                      environ_update=dict(LC_ALL="C"))
    if rc != 0:
        module.warn("%s is installed but the GPU query failed (rc=%d): %s"
                    % (binary, rc, (err or out).strip()))
        _finish(module, result)

    try:
        gpus = parse_query_gpu_csv(out)
    except ValueError as exc:
        module.fail_json(msg="Cannot read the nvidia-smi output: %s" % exc, stdout=out, stderr=err,
                         **result)

    for gpu in gpus:
        gpu["model"] = model_key(gpu)
        if gpu["model"] is None:
            module.warn("GPU %s (%s, PCI device id %s) is not in the gpushare GPU catalogue"
                        % (gpu["index"], gpu["name"], gpu["pci_device_id"]))
    result["ansible_facts"]["gpushare_gpus_detected"] = gpus
    result["host_driver"] = dict(installed=True,
                                 version=gpus[0]["driver_version"] if gpus else None)
    _finish(module, result)


if __name__ == "__main__":
    main()
