"""A team checked against what its platform offers, and rendered (pure): the namespace's objects, its FSx volumes
and claims, its NodePool. Every problem is reported at once, under the team's config key path.

The checks live in `checks` (namespace, Profile, storage, pipeline artifacts), `pool` (the team's NodePool) and
`share` (its GPU share); this module gathers them and renders what the team gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..config.errors import ConfigError, ConfigIssue
from ..karpenter.render import render_nodepool
from ..karpenter.specs import NodePoolSpec
from ..kubeflow.pipelines import filled_team_manifests
from ..kubeflow.pipelines_store import S3Store
from ..kubeflow.teams import OWNER_ANNOTATION, PROFILE_NAMESPACE_LABELS
from ..kueue.queues import (
    MANAGED_NAMESPACE_LABEL,
    MANAGED_NAMESPACE_VALUE,
    Flavor,
    GpuShare,
    gpu_share,
    neuron_ceilings,
    resource_flavor,
    team_queue,
)
from ..storage.render import fsx_volume
from .checks import fit_problems, pipelines_bucket
from .config import TeamConfig
from .namespace import Manifest, namespace_manifests
from .offer import PlatformOffer
from .pool import on_efa_class, own_flavor, plan_pool, pool_name
from .share import share_problems


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


def _queues(team: TeamConfig, offer: PlatformOffer, share: GpuShare, own: Flavor | None) -> tuple[Manifest, Manifest]:
    """The team's queue: its own GPU pool first (no other team's queue lists it), then the platform's shared pools,
    the share split between them (`queues.flavor_quotas`)."""
    assert offer.kueue is not None
    return team_queue(team.name, share, offer.kueue.shared_flavor(), own=own, cohort=offer.kueue.cohort)


@dataclass(frozen=True)
class _Store:
    """Where the team keeps data in S3: the bucket (its `buckets` key and name), the team's prefix, and the
    ConfigMaps that point its pipeline runs there (None without a Profile whose runs write to S3)."""

    key: str | None
    bucket: str | None
    prefix: str | None
    pipelines: dict[str, Manifest] | None


def _store(team: TeamConfig, offer: PlatformOffer) -> _Store:
    """The team's bucket: the platform's Pipelines bucket when its Profile's runs write to S3, else its own choice."""
    key = pipelines_bucket(team, offer) or (team.storage.bucket if team.storage is not None else None)
    bucket = offer.buckets[key] if key is not None else None
    prefix = team.own_prefix if key is not None else None
    pipelines = None
    if pipelines_bucket(team, offer) is not None:
        assert bucket is not None
        assert prefix is not None
        store = S3Store(offer.region, {team.name: prefix})
        pipelines = {o["metadata"]["name"]: o for o in filled_team_manifests(team.name, store, bucket)}
    return _Store(key, bucket, prefix, pipelines)


def _namespace_metadata(
    team: TeamConfig, offer: PlatformOffer, labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None
) -> tuple[Mapping[str, str] | None, Mapping[str, str] | None]:
    """The namespace's labels and annotations: the caller's, plus what a Profile and Kueue need there."""
    if team.kubeflow is not None:
        # The profile controller adopts an existing namespace only when its `owner` annotation names the Profile's
        # owner; its labels are there from the start, so pods created before it reconciles get their sidecar.
        labels = {**PROFILE_NAMESPACE_LABELS, **(labels or {})}
        annotations = {OWNER_ANNOTATION: team.kubeflow.owner, **(annotations or {})}
    if offer.kueue is not None:
        # Kueue's webhooks act in namespaces with this label only.
        labels = {**(labels or {}), MANAGED_NAMESPACE_LABEL: MANAGED_NAMESPACE_VALUE}
    return labels, annotations


def _checked_pool(team: TeamConfig, offer: PlatformOffer) -> NodePoolSpec | None:
    """The team's NodePool spec, or ConfigError listing every way the team does not fit the platform."""
    problems = fit_problems(team, offer)
    spec = None
    if team.node_pool is not None:
        spec, pool_problems = plan_pool(team, offer)
        problems += pool_problems
    problems += share_problems(team, offer, spec)
    if problems:
        raise ConfigError(_issues(problems))
    return spec


def plan_team(
    team: TeamConfig,
    offer: PlatformOffer,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> TeamPlan:
    """The team's objects on this platform, or ConfigError listing every way the team does not fit it."""
    spec = _checked_pool(team, offer)
    volumes, claims = _volumes(team, offer)
    startup_taints = [taint.taint() for taint in offer.node_pool_startup_taints]
    store = _store(team, offer)
    labels, annotations = _namespace_metadata(team, offer, labels, annotations)
    own = own_flavor(team, spec) if offer.kueue is not None else None
    neuron_quota = neuron_ceilings(
        spec.accelerator_limits if spec is not None and spec.accelerator == "neuron" else None
    )
    share = gpu_share(team.quota.gpus, team.quota.gpu_borrowing_limit, queueing=offer.kueue is not None)
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
            render_nodepool(pool_name(team.name), spec, startup_taints=startup_taints, efa=on_efa_class(team, offer))
            if spec
            else None
        ),
        bucket=store.bucket,
        bucket_kms_key_arn=offer.bucket_kms_key_arns.get(store.key) if store.key is not None else None,
        gpu_share=share,
        neuron_quota=neuron_quota,
        queues=_queues(team, offer, share, own) if offer.kueue is not None else None,
        flavor=resource_flavor(own) if own is not None else None,
        s3_prefix=store.prefix,
        pipelines=store.pipelines,
    )
