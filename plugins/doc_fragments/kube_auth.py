# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment:
    """The connection options of the controller-side cluster plugins (kube_client.AUTH_SPEC)."""

    DOCUMENTATION = r'''
options:
  kubeconfig:
    description: Path of the kubeconfig; the client's default (C(KUBECONFIG), C(~/.kube/config)) when not given.
    type: path
  context:
    description: The kubeconfig context; its current context when not given.
    type: str
'''
