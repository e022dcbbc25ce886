"""Where a team clashes with its platform (pure): its namespace, its Kubeflow Profile, its storage, and where its
pipeline runs keep artifacts. Each problem is a (key path under `team`, message) pair; the plan reports them all at
once."""

from __future__ import annotations

from ..gpu.admission import SYSTEM_NAMESPACES
from ..identity.team_policy import prefix_within
from ..kubeflow.pipelines_store import server_prefix_overlap
from .config import TeamConfig
from .offer import OfferedPipelines, PlatformOffer
from .share import Problem

#: Namespaces no team may take: Kubernetes' own and the platform's (exempt from its GPU admission policy).
RESERVED_NAMESPACES = frozenset({"default", *SYSTEM_NAMESPACES})


def fit_problems(team: TeamConfig, offer: PlatformOffer) -> list[Problem]:
    """Every way the team's namespace, storage, Profile and pipeline artifacts do not fit the platform."""
    problems = _namespace_problems(team, offer) + _storage_problems(team, offer) + _kubeflow_problems(team, offer)
    return problems + _pipelines_problems(team, offer)


def _namespace_problems(team: TeamConfig, offer: PlatformOffer) -> list[Problem]:
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


def _kubeflow_problems(team: TeamConfig, offer: PlatformOffer) -> list[Problem]:
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


def _storage_problems(team: TeamConfig, offer: PlatformOffer) -> list[Problem]:
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


def pipelines_bucket(team: TeamConfig, offer: PlatformOffer) -> str | None:
    """The `buckets` key of the bucket the team's pipeline runs write to: the platform's Pipelines bucket when they
    keep artifacts in S3 and the team has a Profile; else None."""
    pipelines = offer.kubeflow_pipelines
    if team.kubeflow is None or pipelines is None or pipelines.artifacts != "s3":
        return None
    return pipelines.bucket


def _bucket_unnamed(offer: PlatformOffer) -> bool:
    """The platform's Pipelines keep artifacts in S3, but its outputs name no bucket of theirs."""
    offered = offer.kubeflow_pipelines
    return offered is not None and offered.artifacts == "s3" and offered.bucket not in offer.buckets


def _pipelines_problems(team: TeamConfig, offer: PlatformOffer) -> list[Problem]:
    """A Profile's runs write where the platform's Pipelines keep artifacts: with S3, under the team's prefix of the
    platform's Kubeflow bucket. A team's prefix in that bucket, Profile or not, stays clear of the platform's Kubeflow
    teams' and its API server's (the rule that keeps the platform's own teams apart)."""
    offered = offer.kubeflow_pipelines
    problems: list[Problem] = []
    if team.kubeflow is not None:
        problems = _profile_artifacts_problems(team, offer)
        if _bucket_unnamed(offer):
            return problems  # nothing more to check in a bucket the platform does not name
    if offered is None or offered.artifacts != "s3" or offered.bucket is None:
        return problems
    if team.kubeflow is not None:
        problems += _profile_s3_problems(team, offered.bucket)
    elif team.storage is None or team.storage.bucket != offered.bucket:
        return problems
    return problems + _prefix_problems(team, offered, offered.bucket)


def _profile_artifacts_problems(team: TeamConfig, offer: PlatformOffer) -> list[Problem]:
    """A Profile's `kubeflow.artifacts`, when set, is where the platform's Pipelines keep them, and with S3 the
    platform names their bucket."""
    assert team.kubeflow is not None
    offered = offer.kubeflow_pipelines
    mode = offered.artifacts if offered is not None else "seaweedfs"
    problems: list[Problem] = []
    wanted = team.kubeflow.artifacts
    if wanted is not None and wanted != mode:
        where = (
            f"its kubeflow.pipelines.artifacts is {mode}"
            if offered is not None
            else "it exports no kubeflowPipelines output, so keeps none in S3"
        )
        message = f"asks for {wanted}, but the platform's Pipelines keep their artifacts elsewhere ({where})"
        problems.append(("kubeflow.artifacts", message))
    if offered is not None and _bucket_unnamed(offer):
        message = (
            f"the platform's Pipelines keep artifacts in S3, but its outputs name no bucket of theirs "
            f"({offered.bucket!r} is not one of its buckets {sorted(offer.buckets)}); is the platform on an "
            "older version?"
        )
        problems.append(("kubeflow.artifacts" if wanted is not None else "kubeflow", message))
    return problems


def _profile_s3_problems(team: TeamConfig, bucket: str) -> list[Problem]:
    """A Profile's runs write under the team's prefix of the Pipelines bucket, over HTTPS."""
    problems: list[Problem] = []
    if team.storage is not None and team.storage.bucket != bucket:
        problems.append(
            (
                "storage.bucket",
                (
                    f"the platform's Pipelines keep artifacts in its bucket {bucket!r} (its "
                    f"kubeflow.bucket), and a Profile's runs write under the team's prefix there; use bucket "
                    f"{bucket!r}"
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
    return problems


def _prefix_problems(team: TeamConfig, offered: OfferedPipelines, bucket: str) -> list[Problem]:
    """The team's prefix of the Pipelines bucket overlaps none of the platform's Kubeflow teams' nor its API
    server's."""
    problems: list[Problem] = []
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
                        f"kubeflow.teams.{other}.s3Prefix) in bucket {bucket!r}, so each role could read and "
                        f"write the other's data; {hint}"
                    ),
                )
            )
    if offered.server_prefix is not None and (overlap := server_prefix_overlap(prefix, offered.server_prefix)):
        problems.append((key, f"{whose} {overlap}; {hint}"))
    return problems
