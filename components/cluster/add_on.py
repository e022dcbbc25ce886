"""What an add-on is (pure): one Helm chart the platform installs into a namespace of its own on the system nodes,
declared once, in the add-on's folder, with everything the rest of the platform needs to know of it.

The platform's program installs every add-on the config turns on (`components.platform.config.ADD_ONS`) through one
component (`cluster.add_on_part.AddOnPart`); the system node sizing counts its `workloads`, and the platform model
allows its `secret_readers`. So a new add-on is its folder, its pin in `components.versions`, and one line in
`ADD_ONS`; docs/layout.md shows one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..scheduling import Placement
from ..versions import ChartPin
from .capacity import Workload

#: The levels a namespace can enforce (kubernetes.io/docs/concepts/security/pod-security-standards).
PodSecurityLevel = Literal["privileged", "baseline", "restricted"]


@dataclass(frozen=True)
class AddOn:
    """An add-on, as the platform installs it."""

    #: The logical name of its component and of its Helm release (its namespace is `<name>-namespace`): fixed once
    #: released, since renaming it replaces what it made.
    name: str
    #: The component's Pulumi type token (`eksml:<folder>:<Class>`), fixed once released for the same reason.
    pulumi_type: str
    #: Its chart, pinned in `components.versions`.
    chart: ChartPin
    #: The namespace it runs in, which the platform creates, labels and isolates, and deletes on destroy.
    namespace: str
    #: The Pod Security level its namespace enforces: the strictest its pods pass.
    pod_security: PodSecurityLevel
    #: Its chart values, given where the platform's controllers run (`ClusterHandle.system_placement`).
    values: Callable[[Placement], Mapping[str, Any]]
    #: Its namespace's NetworkPolicies keyed by name, given the namespace and where Prometheus runs (None: no
    #: monitoring): default deny and the paths its pods use (`network_policies.system_namespace`).
    policies: Callable[[str, str | None], Mapping[str, Mapping[str, Any]]]
    #: What its pods request on the system nodes, which nothing grows: the sizing adds these to the rest.
    workloads: tuple[Workload, ...]
    #: Its service accounts (`namespace/name`) that keep a right on every namespace's Secrets, each with why.
    #: The platform model finds any other that gains one.
    secret_readers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        outside = sorted(reader for reader in self.secret_readers if not reader.startswith(f"{self.namespace}/"))
        if outside:
            raise ValueError(f"add-on {self.name}: secret_readers {outside} are not in its namespace {self.namespace}")
