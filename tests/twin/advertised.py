"""What a GPU node advertises, read from the GPU Operator's ConfigMaps and the node's labels
the way the real components read them. Written from the upstream formats alone; it never
reads the Plan or the collection's code, so the unit test and the twin can compare the two.

- MIG Manager (NVIDIA/mig-parted README, "Configuration"): the ConfigMap key ``config.yaml``
  holds ``version: v1`` and ``mig-configs``: config name -> list of entries
  ``{devices: all | [index, ...], mig-enabled: bool, mig-devices: {profile: count}}``; the
  node label ``nvidia.com/mig.config`` names the config applied to the node's GPUs.
- Device plugin (NVIDIA/k8s-device-plugin README, "Configuration File", "MIG Strategies",
  "Shared Access to GPUs"): the node label ``nvidia.com/device-plugin.config`` names a key of
  its ConfigMap (the chart's ``devicePlugin.config.default`` without one); ``flags.migStrategy``
  ``none`` advertises every GPU as ``nvidia.com/gpu``, ``mixed`` a GPU without MIG as
  ``nvidia.com/gpu`` and each MIG device as ``nvidia.com/mig-<profile>`` ('+' written '.'),
  ``single`` every MIG device as ``nvidia.com/gpu``; ``sharing.timeSlicing`` / ``sharing.mps``
  ``resources: [{name, replicas[, rename]}]`` multiply that resource by ``replicas`` and, with
  ``renameByDefault: true``, advertise it as ``<name>.shared``.
- MPS (k8s-device-plugin README, "With CUDA MPS": "the only supported resource available for
  MPS are nvidia.com/gpu resources and only with full GPUs", "Sharing with MPS is currently not
  supported on devices with MIG enabled"; cmd/nvidia-device-plugin/main.go: "using
  --mig-strategy=mixed is not supported with MPS"): a config that breaks these does not start
  the plugin, so nothing is advertised; here it is an error.
"""
from __future__ import annotations

from collections import Counter

import yaml

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
# GPU Operator: a node labelled so gets no device plugin pod (operator docs, "Common chart
# customization options": nvidia.com/gpu.deploy.<operand>), so it advertises no GPU resource.
DEPLOY_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"


def gpu_layouts(mig_parted: dict, config_name: str, gpu_count: int) -> list[dict | None]:
    """Per GPU index: its MIG devices {profile: count}, or None where MIG is off."""
    configs = mig_parted["mig-configs"]
    if config_name not in configs:
        raise AssertionError("mig config %r is not in the ConfigMap (has %s)" % (config_name, sorted(configs)))
    layouts: list = [None] * gpu_count
    seen: set[int] = set()
    for entry in configs[config_name]:
        devices = range(gpu_count) if entry["devices"] == "all" else entry["devices"]
        for index in devices:
            if not 0 <= index < gpu_count or index in seen:
                raise AssertionError("mig config %r: device %r twice or not on this node" % (config_name, index))
            seen.add(index)
            layouts[index] = dict(entry.get("mig-devices") or {}) if entry["mig-enabled"] else None
    return layouts


def device_plugin_resources(config: dict, layouts: list[dict | None]) -> dict[str, int]:
    """What the device plugin advertises with ``config`` on GPUs cut as ``layouts``."""
    strategy = config.get("flags", {}).get("migStrategy", "none")
    counts: Counter = Counter()
    for layout in layouts:
        if layout is None or strategy == "none":
            counts["nvidia.com/gpu"] += 1
        else:
            for profile, n in layout.items():
                name = "nvidia.com/gpu" if strategy == "single" else "nvidia.com/mig-" + profile.replace("+", ".")
                counts[name] += n
    for method, sharing in (config.get("sharing") or {}).items():
        assert method in ("timeSlicing", "mps"), method
        if method == "mps":
            names = sorted(r["name"] for r in sharing["resources"])
            if names != ["nvidia.com/gpu"] or strategy == "mixed" or any(layout is not None for layout in layouts):
                raise AssertionError("the device plugin does not start with sharing.mps of %s, migStrategy %s and MIG "
                                     "layouts %s: MPS shares nvidia.com/gpu on full GPUs only" % (names, strategy, layouts))
        for resource in sharing["resources"]:
            cards = counts.pop(resource["name"], 0)
            name = resource.get("rename") or (resource["name"] + ".shared" if sharing.get("renameByDefault")
                                              else resource["name"])
            counts[name] += cards * resource["replicas"]
    return {name: n for name, n in sorted(counts.items()) if n}


def advertised(configmaps: dict[str, dict], labels: dict, gpu_count: int, default_key: str = "default") -> dict[str, int]:
    """What a node with ``labels`` and ``gpu_count`` GPUs advertises, from the ConfigMaps'
    ``data`` (``{configmap name: data}``: the mig-parted one has a ``config.yaml`` key)."""
    if labels.get(DEPLOY_DEVICE_PLUGIN_LABEL) == "false":
        return {}
    mig = next(yaml.safe_load(d["config.yaml"]) for d in configmaps.values() if "config.yaml" in d)
    plugin = next(d for d in configmaps.values() if "config.yaml" not in d)
    layouts = gpu_layouts(mig, labels[MIG_CONFIG_LABEL], gpu_count) if MIG_CONFIG_LABEL in labels \
        else [None] * gpu_count
    key = labels.get(DEVICE_PLUGIN_LABEL, default_key)
    if key not in plugin:
        raise AssertionError("device-plugin config %r is not in the ConfigMap (has %s)" % (key, sorted(plugin)))
    return device_plugin_resources(yaml.safe_load(plugin[key]), layouts)
