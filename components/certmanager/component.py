"""cert-manager, owned by the platform: one installation that every part needing certificates uses (Kubeflow's
webhooks, Istio's and the apps' Certificates), never a second copy inside a part.

The release is the gate its users wait for: Helm waits for the controller, the CA injector and the webhook to be
ready, and the chart's post-install check proves the webhook answers, so a custom resource of `cert-manager.io`
created after it is neither refused nor left without a CRD. The program installs it as an add-on (`add_on.ADD_ON`);
`CertManager` is the same for a program of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from ..cluster.add_on_part import AddOnArgs, AddOnPart
from .add_on import ADD_ON, chart_values
from .names import GROUPS, NAMESPACE

__all__ = ["GROUPS", "NAMESPACE", "CertManager", "CertManagerArgs", "chart_values"]


@dataclass(frozen=True)
class CertManagerArgs(AddOnArgs):
    """cert-manager on a cluster: the cluster, the controllers its namespace's delete waits for, and where
    Prometheus runs."""


class CertManager(AddOnPart):
    """cert-manager on the system nodes, in a namespace the stack owns (Pod Security `restricted`)."""

    def __init__(self, name: str, args: CertManagerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(ADD_ON, args, opts, name=name)
