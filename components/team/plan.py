"""A team checked against what its platform offers, and rendered (pure): the namespace's objects, its FSx volumes
and claims, its NodePool. Every problem is reported at once, under the team's config key path.

A team pool is one of the kinds of capacity the platform runs (a preset of one of its pools, on that pool's node
class) and no larger than the platform's own pool of that kind: the platform team decides what exists and what it
may cost, a team decides how much of it is reserved for itself. The pool is tainted and labelled for the team, so
only pods that ask for it land there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..config.errors import ConfigError, ConfigIssue, issues_from
from ..gpu.admission import SYSTEM_NAMESPACES
from ..identity.team_policy import prefix_within
from ..karpenter.presets import NODE_POOL_PRESETS
from ..karpenter.render import render_nodepool
from ..karpenter.specs import NodePoolSpec
from ..kubeflow.pipelines import S3Store, filled_team_manifests, server_prefix_overlap
from ..kubeflow.teams import OWNER_ANNOTATION, PROFILE_NAMESPACE_LABELS
from ..kueue.queues import (
    MANAGED_NAMESPACE_LABEL,
    MANAGED_NAMESPACE_VALUE,
    Flavor,
    GpuShare,
    gpu_share,
    neuron_ceilings,
    pool_flavor,
    resource_flavor,
    team_queue,
)
from ..scheduling import TEAM_TAINT_KEY, Taint
from ..storage.render import fsx_volume
from .config import TeamConfig
from .namespace import TEAM_LABEL, Manifest, namespace_manifests
from .offer import OfferedPool, PlatformOffer
from .quantity import parse_quantity
from .share import share_problems

#: Namespaces no team may take: Kubernetes' own and the platform's (exempt from its GPU admission policy).
RESERVED_NAMESPACES = frozenset({"default", *SYSTEM_NAMESPACES})


def team_taint(team: str) -> Taint:
    return Taint(TEAM_TAINT_KEY, team, "NoSchedule")


def pool_name(team: str) -> str:
    return f"team-{team}"


@dataclass(frozen=True)
class TeamPlan:
    team: TeamConfig
    #: Namespace, quota, limits and network policies, keyed by short name.
    namespace: dict[str, Manifest]
    #: Static PersistentVolumes of the shared file system, and every claim, keyed by claim name.
    volumes: dict[str, Manifest]
    claims: dict[str, Manifest]
    node_pool: NodePoolSpec | None
    node_pool_manifest: Manifest | None
    #: The bucket (its name) the team's role may use a prefix of, that prefix, and the bucket's KMS key.
    bucket: str | None
    bucket_kms_key_arn: str | None
    #: The team's GPU share: nominal, what it may borrow, and the ceiling its ResourceQuota holds.
    gpu_share: GpuShare
    #: The ResourceQuota entries capping its Neuron devices and cores: what its own Neuron pool runs, else none.
    neuron_quota: dict[str, str]
    #: Its ClusterQueue and LocalQueue, when the platform runs Kueue.
    queues: tuple[Manifest, Manifest] | None = None
    #: The ResourceFlavor of its own GPU pool, when it has one and the platform runs Kueue.
    flavor: Manifest | None = None
    s3_prefix: str | None = None
    #: With a Profile on a platform whose Pipelines keep artifacts in S3: the ConfigMaps that give the namespace's
    #: runs their pipeline root under the team's prefix (`kfp-launcher`, `metadata-grpc-configmap`,
    #: `artifact-repositories`), keyed by name, as the platform writes them into its own teams' namespaces.
    pipelines: dict[str, Manifest] | None = None


def _issues(problems: list[tuple[str, str]]) -> list[ConfigIssue]:
    return [ConfigIssue(path=f"team.{path}" if path else "team", message=message) for path, message in problems]


def _namespace_problems(team: TeamConfig, offer: PlatformOffer) -> list[tuple[str, str]]:
    taken = {*RESERVED_NAMESPACES, *([offer.monitoring_namespace] if offer.monitoring_namespace else [])}
    if team.name in taken:
        return [("name", f"{team.name!r} is a namespace of Kubernetes or of the platform")]
    if team.name in offer.fsx_namespaces:
        already = f"the platform already creates the namespace {team.name!r} (its storage.fsx.namespaces)"
        return [("name", f"{already}; remove it there, or choose another name")]
    if team.name in offer.kubeflow_teams:
        already = f"the platform's Kubeflow already creates the namespace {team.name!r} (its kubeflow.teams)"
        return [
            (
                "name",
                (
                    f"{already}; remove it there and give the team its Profile here (team.kubeflow), or choose "
                    "another name"
                ),
            )
        ]
    return []


def _kubeflow_problems(team: TeamConfig, offer: PlatformOffer) -> list[tuple[str, str]]:
    if team.kubeflow is not None and offer.identity == "podIdentity":
        # The Profile's IRSA plugin would annotate default-editor with the role, which Pod Identity must not have.
        return [
            (
                "kubeflow",
                (
                    "the platform runs EKS Pod Identity (its identity: podIdentity), which does not cover Kubeflow "
                    "Profiles yet; remove the kubeflow section, or run the platform with identity: irsa"
                ),
            )
        ]
    if team.kubeflow is not None and not offer.kubeflow_enabled:
        return [
            (
                "kubeflow",
                (
                    "the platform runs no Kubeflow (its kubeflow.enabled), so no profile controller would take the "
                    "team's Profile"
                ),
            )
        ]
    return []


def _storage_problems(team: TeamConfig, offer: PlatformOffer) -> list[tuple[str, str]]:
    problems = []
    if team.storage is not None and team.storage.bucket not in offer.buckets:
        problems.append(
            ("storage.bucket", f"the platform has no bucket {team.storage.bucket!r}; it has {sorted(offer.buckets)}")
        )
    for key, claim in sorted(team.fsx_claims.items()):
        if not claim.storage_class and not offer.has_shared_file_system:
            problems.append((f"fsxClaims.{key}", "the platform runs no shared FSx file system (its storage.fsx)"))
        if claim.storage_class and offer.fsx_storage_class is None:
            problems.append(
                (
                    f"fsxClaims.{key}.storageClass",
                    "the platform offers no FSx StorageClass (its storage.fsx.storageClass)",
                )
            )
    return problems


def _pipelines_bucket(team: TeamConfig, offer: PlatformOffer) -> str | None:
    """The `buckets` key of the bucket the team's pipeline runs write to: the platform's Pipelines bucket when they
    keep artifacts in S3 and the team has a Profile; else None."""
    pipelines = offer.kubeflow_pipelines
    if team.kubeflow is None or pipelines is None or pipelines.artifacts != "s3":
        return None
    return pipelines.bucket


def _pipelines_problems(team: TeamConfig, offer: PlatformOffer) -> list[tuple[str, str]]:
    """A Profile's runs write where the platform's Pipelines keep artifacts: with S3, under the team's prefix of the
    platform's Kubeflow bucket. A team's prefix in that bucket, Profile or not, stays clear of the platform's Kubeflow
    teams' and its API server's (the rule that keeps the platform's own teams apart)."""
    offered = offer.kubeflow_pipelines
    mode = offered.artifacts if offered is not None else "seaweedfs"
    problems: list[tuple[str, str]] = []
    if team.kubeflow is not None:
        wanted = team.kubeflow.artifacts
        if wanted is not None and wanted != mode:
            where = (
                f"its kubeflow.pipelines.artifacts is {mode}"
                if offered is not None
                else "it exports no kubeflowPipelines output, so keeps none in S3"
            )
            message = f"asks for {wanted}, but the platform's Pipelines keep their artifacts elsewhere ({where})"
            problems.append(("kubeflow.artifacts", message))
        if offered is not None and mode == "s3" and offered.bucket not in offer.buckets:
            message = (
                f"the platform's Pipelines keep artifacts in S3, but its outputs name no bucket of theirs "
                f"({offered.bucket!r} is not one of its buckets {sorted(offer.buckets)}); is the platform on an "
                "older version?"
            )
            return [*problems, ("kubeflow.artifacts" if wanted is not None else "kubeflow", message)]
    if offered is None or mode != "s3" or offered.bucket is None:
        return problems
    if team.kubeflow is not None:
        if team.storage is not None and team.storage.bucket != offered.bucket:
            problems.append(
                (
                    "storage.bucket",
                    (
                        f"the platform's Pipelines keep artifacts in its bucket {offered.bucket!r} (its "
                        f"kubeflow.bucket), and a Profile's runs write under the team's prefix there; use bucket "
                        f"{offered.bucket!r}"
                    ),
                )
            )
        if not team.network.https_egress:
            problems.append(
                (
                    "network.httpsEgress",
                    (
                        "the platform's Pipelines keep artifacts in S3: the team's runs need HTTPS out (S3, and STS "
                        "for their role); remove it"
                    ),
                )
            )
    elif team.storage is None or team.storage.bucket != offered.bucket:
        return problems
    prefix = team.own_prefix
    chosen = team.storage is not None and team.storage.prefix is not None
    key, whose = ("storage.prefix", repr(prefix)) if chosen else ("name", f"the team's prefix {prefix!r} (its name's)")
    hint = "choose another prefix" if chosen else "set storage.prefix to another prefix"
    for other, theirs in sorted(offered.team_prefixes.items()):
        if prefix_within(prefix, theirs) or prefix_within(theirs, prefix):
            problems.append(
                (
                    key,
                    (
                        f"{whose} overlaps {theirs!r}, the prefix of the platform's Kubeflow team {other} (its "
                        f"kubeflow.teams.{other}.s3Prefix) in bucket {offered.bucket!r}, so each role could read and "
                        f"write the other's data; {hint}"
                    ),
                )
            )
    if offered.server_prefix is not None and (overlap := server_prefix_overlap(prefix, offered.server_prefix)):
        problems.append((key, f"{whose} {overlap}; {hint}"))
    return problems


def _offered_pool(team: TeamConfig, offer: PlatformOffer) -> OfferedPool:
    """The platform's pool a team pool copies its node class from: the first by name of the team pool's preset."""
    assert team.node_pool is not None
    offered = offer.pools_of(team.node_pool.preset)
    return offered[min(offered)]


def _on_efa_class(team: TeamConfig, offer: PlatformOffer) -> bool:
    """The team pool's node class attaches EFA interfaces: its nodes get the label the EFA device plugin selects
    (`scheduling.EFA_LABEL`, as the platform's own pools on that class do), or the plugin never runs there and a pod
    asking for `vpc.amazonaws.com/efa` stays pending."""
    return _offered_pool(team, offer).efa


def _pool(team: TeamConfig, offer: PlatformOffer) -> tuple[NodePoolSpec | None, list[tuple[str, str]]]:
    config = team.node_pool
    assert config is not None
    offered = offer.pools_of(config.preset)
    if not offered or config.preset not in NODE_POOL_PRESETS:
        kinds = sorted(
            {p.preset for p in offer.node_pools.values() if p.preset is not None and p.preset in NODE_POOL_PRESETS}
        )
        return None, [("nodePool.preset", f"the platform runs no pool of preset {config.preset!r}; it runs {kinds}")]
    problems: list[tuple[str, str]] = []
    if pool_name(team.name) in offer.node_pools:
        problems.append(("name", f"the platform has a NodePool named {pool_name(team.name)!r} already"))
    preset = NODE_POOL_PRESETS[config.preset]
    # The ceiling of each resource: the largest the platform allows a pool of this kind.
    ceiling: dict[str, tuple[str, str]] = {}
    for name, pool in offered.items():
        for resource, value in pool.limits.items():
            if resource not in ceiling or parse_quantity(value) > parse_quantity(ceiling[resource][1]):
                ceiling[resource] = (name, value)
    # What the team does not set: the preset's limit, no higher than the ceiling, and never uncapped where the
    # platform's pool is capped. What it sets: refused above the ceiling.
    limits = dict(preset["limits"])
    for resource, (_, value) in ceiling.items():
        if resource not in limits or parse_quantity(limits[resource]) > parse_quantity(value):
            limits[resource] = value
    for resource, value in sorted(config.limits.items()):
        if resource in ceiling and parse_quantity(value) > parse_quantity(ceiling[resource][1]):
            name, allowed = ceiling[resource]
            problems.append(
                (
                    f"nodePool.limits.{resource}",
                    f"{value} is more than the platform allows a {config.preset} pool ({allowed}, its pool {name!r})",
                )
            )
        limits[resource] = value
    for index, zone in enumerate(config.zones):
        if zone not in offer.availability_zones:
            problems.append(
                (
                    f"nodePool.zones[{index}]",
                    f"{zone!r} is not one of the platform's zones {list(offer.availability_zones)}",
                )
            )
    node_class = _offered_pool(team, offer).node_class  # several pools of the kind: the first by name
    document: dict[str, Any] = {
        "preset": config.preset,
        "nodeClass": node_class,
        "limits": limits,
        "taints": [*preset.get("taints", []), team_taint(team.name).as_dict()],
        "labels": {**preset.get("labels", {}), TEAM_LABEL: team.name},
    }
    if config.zones:
        document["zones"] = list(config.zones)
    try:
        spec = NodePoolSpec.model_validate(document)
    except ValidationError as error:
        return None, problems + [
            (f"nodePool.{issue.path}", issue.message) for issue in issues_from(error, NodePoolSpec)
        ]
    if "spot" in spec.capacity_types and offer.karpenter_interruption_queue is None:
        problems.append(
            (
                "nodePool.preset",
                f"{config.preset} allows spot, but the platform handles no spot interruptions (no interruption queue)",
            )
        )
    if spec.accelerator == "nvidia" and offer.gpu_taint is None:
        problems.append(
            (
                "nodePool.preset",
                f"{config.preset} launches GPUs, but the platform runs no GPU stack (device plugin, admission)",
            )
        )
    return spec, problems


def _volumes(team: TeamConfig, offer: PlatformOffer) -> tuple[dict[str, Manifest], dict[str, Manifest]]:
    volumes, claims = {}, {}
    for key, claim in sorted(team.fsx_claims.items()):
        if claim.storage_class:
            claims[key] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": key, "namespace": team.name},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": offer.fsx_storage_class,
                    "resources": {"requests": {"storage": f"{claim.size_gib}Gi"}},
                },
            }
            continue
        assert offer.fsx_file_system_id
        assert offer.fsx_dns_name
        assert offer.fsx_mount_name
        assert offer.fsx_storage_capacity_gib
        volumes[key], claims[key] = fsx_volume(
            name=f"{team.name}-{key}",
            namespace=team.name,
            claim=key,
            file_system_id=offer.fsx_file_system_id,
            dns_name=offer.fsx_dns_name,
            mount_name=offer.fsx_mount_name,
            # A static Lustre volume is not sized by its claim; this states the file system's size.
            capacity_gib=offer.fsx_storage_capacity_gib,
        )
    return volumes, claims


def _own_flavor(team: TeamConfig, spec: NodePoolSpec | None) -> Flavor | None:
    """The flavor of the team's own GPU pool: only pods that tolerate the team's taint are given it."""
    if spec is None or not spec.gpu_limit:
        return None
    return pool_flavor(pool_name(team.name), spec.labels, spec.gpu_limit, [team_taint(team.name).as_dict()])


def _queues(team: TeamConfig, offer: PlatformOffer, share: GpuShare, own: Flavor | None) -> tuple[Manifest, Manifest]:
    """The team's queue: its own GPU pool first (no other team's queue lists it), then the platform's shared pools,
    the share split between them (`queues.flavor_quotas`)."""
    assert offer.kueue is not None
    return team_queue(team.name, share, offer.kueue.shared_flavor(), own=own, cohort=offer.kueue.cohort)


def plan_team(
    team: TeamConfig,
    offer: PlatformOffer,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> TeamPlan:
    """The team's objects on this platform, or ConfigError listing every way the team does not fit it."""
    problems = _namespace_problems(team, offer) + _storage_problems(team, offer) + _kubeflow_problems(team, offer)
    problems += _pipelines_problems(team, offer)
    spec = None
    if team.node_pool is not None:
        spec, pool_problems = _pool(team, offer)
        problems += pool_problems
    problems += share_problems(team, offer, spec)
    if problems:
        raise ConfigError(_issues(problems))
    volumes, claims = _volumes(team, offer)
    startup_taints = [taint.taint() for taint in offer.node_pool_startup_taints]
    bucket_key = _pipelines_bucket(team, offer) or (team.storage.bucket if team.storage is not None else None)
    bucket = offer.buckets[bucket_key] if bucket_key is not None else None
    prefix = team.own_prefix if bucket_key is not None else None
    pipelines = None
    if _pipelines_bucket(team, offer) is not None:
        assert bucket is not None
        assert prefix is not None
        store = S3Store(offer.region, {team.name: prefix})
        pipelines = {o["metadata"]["name"]: o for o in filled_team_manifests(team.name, store, bucket)}
    if team.kubeflow is not None:
        # The profile controller adopts an existing namespace only when its `owner` annotation names the Profile's
        # owner; its labels are there from the start, so pods created before it reconciles get their sidecar.
        labels = {**PROFILE_NAMESPACE_LABELS, **(labels or {})}
        annotations = {OWNER_ANNOTATION: team.kubeflow.owner, **(annotations or {})}
    own = _own_flavor(team, spec) if offer.kueue is not None else None
    neuron_quota = neuron_ceilings(
        spec.accelerator_limits if spec is not None and spec.accelerator == "neuron" else None
    )
    share = gpu_share(team.quota.gpus, team.quota.gpu_borrowing_limit, queueing=offer.kueue is not None)
    if offer.kueue is not None:
        # Kueue's webhooks act in namespaces with this label only.
        labels = {**(labels or {}), MANAGED_NAMESPACE_LABEL: MANAGED_NAMESPACE_VALUE}
    return TeamPlan(
        team=team,
        namespace=namespace_manifests(
            team,
            monitoring_namespace=offer.monitoring_namespace,
            vpc_cidr=offer.vpc_cidr,
            labels=labels,
            annotations=annotations,
            gpu_ceiling=share.ceiling,
            neuron_quota=neuron_quota,
            pod_identity=offer.identity == "podIdentity",
        ),
        volumes=volumes,
        claims=claims,
        node_pool=spec,
        node_pool_manifest=(
            render_nodepool(pool_name(team.name), spec, startup_taints=startup_taints, efa=_on_efa_class(team, offer))
            if spec
            else None
        ),
        bucket=bucket,
        bucket_kms_key_arn=offer.bucket_kms_key_arns.get(bucket_key) if bucket_key is not None else None,
        gpu_share=share,
        neuron_quota=neuron_quota,
        queues=_queues(team, offer, share, own) if offer.kueue is not None else None,
        flavor=resource_flavor(own) if own is not None else None,
        s3_prefix=prefix,
        pipelines=pipelines,
    )
