"""What a policy rule is and what it reads: resources as the engine gives them to policies, violations, and the
readers shared by the rules (pure; no resource code).

Properties may be pulumi-policy's read-only proxies under CrossGuard: structure is tested with `Mapping` /
`Sequence`, never `dict` / `list`, and reading a value the engine does not know yet raises one of `unknown`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

Enforcement = Literal["mandatory", "advisory", "disabled"]

NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
BUCKET = "aws:s3/bucket:Bucket"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_CLUSTERS = ("eks:index:Cluster", "aws:eks/cluster:Cluster")
WORLD = {"0.0.0.0/0", "::/0"}
#: Ports a security group may open to the world: load balancer listeners.
LISTENER_PORTS = {80, 443}


T = TypeVar("T")
UnknownErrors = tuple[type[Exception], ...]


@dataclass(frozen=True)
class Resource:
    """A resource as a rule sees it.

    Reading a property the engine does not know yet raises one of `unknown`: pulumi-policy's UnknownValueError under
    CrossGuard (the adapters set it); nothing offline, where the mocks know every value.
    """

    urn: str
    type: str
    name: str
    props: Mapping[str, Any]
    dependencies: frozenset[str] = frozenset()
    unknown: UnknownErrors = ()

    @property
    def stack(self) -> str:
        return self.urn.split("::")[0].removeprefix("urn:pulumi:")


@dataclass(frozen=True)
class Violation:
    rule: str
    enforcement: Enforcement
    urn: str
    message: str


@dataclass(frozen=True)
class Rule:
    """One policy. A resource rule checks each resource of `types`; a stack rule checks them all together."""

    name: str
    description: str
    remediation: str
    enforcement: Enforcement
    types: tuple[str, ...] = ()
    check_resource: Callable[[Resource], Iterable[str]] | None = None
    check_stack: Callable[[Sequence[Resource]], Iterable[tuple[str, str]]] | None = None
    tags: tuple[str, ...] = field(default=("security",))


# ------------------------------------------------------------------------------------------------------ helpers


def known(resource: Resource, read: Callable[[Resource], T], otherwise: T) -> T:
    """`read(resource)`, or `otherwise` when that reads a value not known yet: only what is unknown is skipped.

    `otherwise` is the answer that reports nothing: a value that is set but not known yet (a key ARN, a queue name)
    will be there after the update."""
    try:
        return read(resource)
    except resource.unknown:
        return otherwise


def truthy(value: Any) -> bool:
    return value is True or value == "true"


def by_dependency(resources: Sequence[Resource], target: Resource, type_: str) -> list[Resource]:
    return [r for r in resources if r.type == type_ and target.urn in r.dependencies]


def chart(resource: Resource) -> str:
    """A Helm release's chart by its last path segment: `repo/chart` and `oci://registry/path/chart` name it too."""
    return str(resource.props.get("chart") or "").rsplit("/", 1)[-1]


def releases(resources: Sequence[Resource]) -> dict[str, Resource]:
    """The stack's Helm releases by chart."""
    return {known(r, chart, ""): r for r in resources if r.type == HELM_RELEASE}
