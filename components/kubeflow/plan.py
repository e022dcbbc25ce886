"""From rendered upstream entries to the staged objects the registration creates: every change this platform makes
to Kubeflow, in one pure function."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..scheduling import DEFAULT_GPU_SCHEDULER, Taint
from . import access as access_
from . import auth as auth_
from . import credentials as credentials_
from . import (
    dashboard,
    gpu_scheduling,
    hardening,
    image_pins,
    katib,
    monitoring,
    network_policy,
    notebooks,
    pipeline_runs,
    pipelines,
    rbac,
    references,
    resilience,
    staging,
    tokens,
    trainer_admission,
    transform,
)
from . import teams as teams_
from .access import Alb, ClusterTokenSpec
from .auth import Contributor, SignIn
from .credentials import Admin, Credentials
from .entries import (
    BY_PATH,
    CERT_MANAGER_ISSUER,
    DEX,
    HUB_REGISTRY,
    KATIB,
    OAUTH2_PROXY_EKS_TOKENS,
    PIPELINES,
    TRAINER,
    Part,
)
from .objects import Manifest
from .pipelines_store import S3Store
from .staging import Item, Staged
from .teams import FsxShare, Team

#: The namespace upstream renders the Hub's per-tenant model registry into (its example user's).
HUB_REGISTRY_NAMESPACE = "kubeflow-user-example-com"


@dataclass(frozen=True)
class Settings:
    """What the platform decides about its Kubeflow; every field but the admin and the storage class has a default."""

    admin: Admin
    storage_class: str  # every claim Kubeflow makes (databases, SeaweedFS, notebook workspaces)
    gpu_node_pools: tuple[str, ...] = ()  # NodePools offered to notebooks, by name
    #: The taints of those pools besides the GPU taint, by pool (a toleration group of its own for each).
    gpu_pool_taints: Mapping[str, tuple[Taint, ...]] = field(default_factory=dict)
    gpu_scheduler: str | None = DEFAULT_GPU_SCHEDULER  # None: the bin-packing scheduler is off
    #: The platform has a training pool (`eksml.io/workload: training`): trainer pods are confined to such pools
    #: (on-demand or reserved, never expiring). Without one (dev) they run on the GPU pools there are.
    training_pools: bool = False
    notebook_idle_minutes: int = 60
    teams: tuple[Team, ...] = ()
    hub_registry_team: str | None = None  # the team the Hub's model registry serves (only with the Hub rendered)
    credentials: Credentials = field(default_factory=Credentials)
    access: Alb | None = None  # None: reached by port-forward only
    tags: Mapping[str, str] = field(default_factory=dict)  # the platform's standard tags, for the ALB
    #: The platform's Prometheus namespace, admitted into every namespace upstream isolates (None: no monitoring).
    monitoring_namespace: str | None = None
    #: The platform's FSx file system, for teams with an FSx claim (None: the stack has none).
    fsx: FsxShare | None = None
    #: Pipelines' artifacts on the platform bucket (None: in SeaweedFS, as upstream ships them).
    pipelines_store: S3Store | None = None
    #: Sizes of named claims, by (namespace, claim name); the others keep upstream's.
    volume_sizes: Mapping[tuple[str, str], str] = field(default_factory=dict)
    #: Connectors, static users and admins besides the admin (default: the admin alone).
    sign_in: SignIn = field(default_factory=SignIn)
    #: Contributors of each team's namespace, by team name.
    contributors: Mapping[str, tuple[Contributor, ...]] = field(default_factory=dict)
    #: What the gateway accepts of the cluster's tokens, when they are on (the oauth2-proxy-with-EKS entry).
    cluster_tokens: ClusterTokenSpec | None = None

    def __post_init__(self) -> None:
        names = [t.name for t in self.teams]
        if len(set(names)) != len(names):
            raise ValueError("team names must be unique")
        if self.hub_registry_team is not None and self.hub_registry_team not in names:
            raise ValueError(f"hub_registry_team {self.hub_registry_team!r} is not a team")
        if self.pipelines_store is not None and set(self.pipelines_store.team_prefixes) != set(names):
            raise ValueError("the Pipelines store must know every team's prefix, and only theirs")
        strangers = sorted(set(self.contributors) - set(names))
        if strangers:
            raise ValueError(f"contributors of teams that do not exist: {', '.join(strangers)}")


def _upstream_items(rendered: Mapping[str, Sequence[Manifest]], settings: Settings) -> list[Item]:
    """The rendered objects the platform keeps, each with its entry's part: only cert-manager's issuer, the Hub's
    registry in its team's namespace, Pipelines given time to come up, and no RBAC the platform leaves out."""
    items: list[Item] = []
    for path, objects in rendered.items():
        entry = BY_PATH[path]
        objects = list(objects)
        if entry == CERT_MANAGER_ISSUER:
            # Only the issuer: the overlay's NetworkPolicies would isolate the platform's cert-manager namespace,
            # which is not Kubeflow's to change.
            objects = [o for o in objects if o["kind"] == "ClusterIssuer"]
        if entry == HUB_REGISTRY:
            if settings.hub_registry_team is None:
                raise ValueError("the Hub's model registry is rendered but no team is named for it")
            objects = transform.retarget_namespace(objects, HUB_REGISTRY_NAMESPACE, settings.hub_registry_team)
        if entry == PIPELINES:
            objects = transform.await_timeout(objects, transform.PIPELINES_READY_SECONDS)
        items.extend(Item(obj, entry.part) for obj in rbac.keep(objects))
    return items


def _stable(items: list[Item], store: S3Store | None) -> tuple[list[Manifest], list[Part | None]]:
    """The objects made exact and stable before anything reads them (cleaned, images pinned, API tokens out, stable
    names; without SeaweedFS' when artifacts are in S3), and the part of each."""
    parts = [item.part for item in items]
    objects = [item.manifest for item in items]
    objects = transform.cleanup(objects)
    objects = image_pins.pin(objects)  # exact images for upstream's moving tags, before anything reads an image
    objects = tokens.without_api_tokens(objects)
    objects = references.stable_names(objects)
    if store is not None:
        kept = [not pipelines.left_out(obj) for obj in objects]
        parts = [part for part, keep in zip(parts, kept, strict=True) if keep]
        objects = pipelines.apply([obj for obj, keep in zip(objects, kept, strict=True) if keep], store)
    return objects, parts


def _changed(objects: list[Manifest], rendered: Mapping[str, Sequence[Manifest]], settings: Settings) -> list[Manifest]:
    """Every change the platform makes to upstream's objects: volumes, credentials, sign-in, notebooks, GPU
    scheduling and placement, resilience, hardening, the gateway's cookies and tokens, monitoring, config digests."""
    objects = transform.volume_sizes(objects, settings.volume_sizes)
    objects = dashboard.installed_links(objects)  # links only to what is installed
    objects = credentials_.apply(objects, settings.credentials, settings.admin)
    objects = auth_.apply(objects, settings.admin.email, settings.admin.username, settings.sign_in)
    objects = notebooks.apply(
        objects,
        gpu_pools=settings.gpu_node_pools,
        storage_class=settings.storage_class,
        idle_minutes=settings.notebook_idle_minutes,
        pool_taints=settings.gpu_pool_taints,
    )
    objects = gpu_scheduling.apply(objects, settings.gpu_scheduler, training_pools=settings.training_pools)
    objects = transform.storage_class(objects, settings.storage_class)
    objects = transform.stateful_placement(objects)
    objects = transform.pinned_architectures(objects)
    objects = pipeline_runs.pin_run_pods(objects)  # the run-time pods Argo makes, which no object shows
    objects = resilience.harden(objects)
    objects = katib.apply(objects)
    objects = hardening.harden_oauth2_proxy(objects)
    objects = hardening.requested(objects)  # after every change that adds a container
    objects = access_.cookies(objects, secure=settings.access is not None)
    if settings.access is not None:
        objects = access_.readiness_gates(objects)
    if OAUTH2_PROXY_EKS_TOKENS.path in rendered:
        objects = access_.cluster_token_issuer(objects, settings.cluster_tokens)
    if settings.monitoring_namespace is not None:
        objects = monitoring.bypass_sidecars(objects)  # scrapes the mesh's authorization cannot admit
    objects = references.config_digests(objects)
    left = credentials_.defaults_left(objects)
    if left:
        raise ValueError("upstream default credentials left:\n" + "\n".join(f"  - {line}" for line in left))
    return objects


def _monitoring_items(objects: list[Manifest], parts: list[Part | None], monitoring_namespace: str) -> list[Item]:
    """Prometheus let into every namespace upstream isolates, and the monitors of what it scrapes there."""
    part_of = {
        obj["metadata"].get("namespace"): part
        for obj, part in zip(objects, parts, strict=True)
        if network_policy.is_network_policy(obj)
    }
    items = [
        Item(network_policy.monitoring_allowance(namespace, monitoring_namespace), part_of[namespace])
        for namespace in network_policy.isolated_namespaces(objects)
    ]
    part_in = {obj["metadata"].get("namespace"): part for obj, part in zip(objects, parts, strict=True)}
    return items + [Item(m, part_in[m["metadata"]["namespace"]]) for m in monitoring.monitors(objects)]


def _part_in(objects: list[Manifest], parts: list[Part | None], namespace: str) -> Part | None:
    """The part of the first object in `namespace`."""
    return next(part for obj, part in zip(objects, parts, strict=True) if obj["metadata"].get("namespace") == namespace)


def _in_cluster_items(objects: list[Manifest], parts: list[Part | None], settings: Settings) -> list[Item]:
    """The gateway let in from the namespaces whose programs call it with the cluster's tokens: the teams' and the
    ones the token spec names (none: nothing to admit)."""
    spec = settings.cluster_tokens or ClusterTokenSpec()
    gateway = access_.gateway_exposure(objects)
    callers = [t.name for t in settings.teams] + list(spec.namespaces)
    if not callers:
        return []
    return [Item(access_.in_cluster_allowance(gateway, callers), _part_in(objects, parts, gateway.namespace))]


def platform_objects(rendered: Mapping[str, Sequence[Manifest]], settings: Settings) -> list[Item]:
    """The rendered objects changed for this platform, each with its entry's part (teams not included)."""
    objects, parts = _stable(_upstream_items(rendered, settings), settings.pipelines_store)
    objects = _changed(objects, rendered, settings)
    items = [Item(obj, part) for obj, part in zip(objects, parts, strict=True)]
    if DEX.path in rendered:
        # Dex makes the CRDs it lacks at start, outside Pulumi, and they would outlive destroy: owned here instead.
        items += [Item(crd, DEX.part) for crd in auth_.missing_dex_crds(objects)]
    items += resilience.budgets(items)
    if KATIB.path in rendered:
        items += [Item(obj, KATIB.part) for obj in katib.platform_manifests()]
    if TRAINER.path in rendered:
        items += [Item(obj, TRAINER.part) for obj in trainer_admission.manifests()]
    if settings.monitoring_namespace is not None:
        items += _monitoring_items(objects, parts, settings.monitoring_namespace)
    exposed = None
    if settings.access is not None:
        exposed = access_.gateway_exposure(objects)
        allowance = access_.load_balancer_allowance(exposed, settings.access.source_cidrs)
        items.append(Item(allowance, _part_in(objects, parts, exposed.namespace)))
    if OAUTH2_PROXY_EKS_TOKENS.path in rendered:
        items += _in_cluster_items(objects, parts, settings)
    closed = network_policy.problems([item.manifest for item in items], settings.monitoring_namespace, exposed)
    if closed:
        raise ValueError(
            "the NetworkPolicies close paths the platform needs:\n" + "\n".join(f"  - {p}" for p in closed)
        )
    return items


def build(rendered: Mapping[str, Sequence[Manifest]], settings: Settings) -> list[Staged]:
    """Every object to register, staged and connected; raises ValueError if the order check finds a problem."""
    items = platform_objects(rendered, settings)
    for team in settings.teams:
        items.extend(Item(obj, None) for obj in teams_.manifests(team, settings.fsx, settings.monitoring_namespace))
        if settings.pipelines_store is not None:
            items.extend(Item(obj, None) for obj in pipelines.team_manifests(team.name, settings.pipelines_store))
        items.extend(Item(obj, None) for obj in auth_.contributors(team.name, settings.contributors.get(team.name, ())))
        if KATIB.path in rendered:
            items.extend(Item(obj, None) for obj in katib.team_manifests(team.name))
    if settings.access is not None:
        # Exposed last, once everything behind the gateway serves (and what its authentication reads exists).
        items.extend(Item(obj, None) for obj in access_.authentication(settings.access))
        items.append(Item(access_.ingress(settings.access, settings.tags), None))
    team_names = [t.name for t in settings.teams]
    staged = staging.stage(items, team_names)
    problems = staging.check(staged)
    if problems:
        raise ValueError("the install order is wrong:\n" + "\n".join(f"  - {p}" for p in problems))
    return staged


__all__ = [
    "HUB_REGISTRY_NAMESPACE",
    "Admin",
    "Alb",
    "Credentials",
    "FsxShare",
    "Part",
    "Settings",
    "Team",
    "build",
    "platform_objects",
]
