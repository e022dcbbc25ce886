"""A Kubeflow team: its namespace, Profile (GPU quota, IRSA for its pipelines and notebooks), PodDefaults, and the
IAM documents of its role.

Everything here is a plain dict. The role ARN, OIDC provider ARN and issuer are strings: real values in tests,
resolved values (inside an `apply`) or placeholders in a program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import network_policies as netpol
from ..kueue.queues import (
    LOCAL_QUEUE,
    MANAGED_NAMESPACE_LABEL,
    MANAGED_NAMESPACE_VALUE,
    QUEUE_LABEL,
    neuron_ceilings,
)
from ..pod_security import TEAM_POD_SECURITY
from ..scheduling import GPU_RESOURCE, NEURON_RESOURCE
from ..storage.render import fsx_volume
from .network_policy import profile_allowances
from .notebooks import ACCESS_ML_PIPELINE, notebook_protection
from .objects import Manifest

#: Pipelines and notebooks of a team run as this ServiceAccount (the profile controller creates it and, with the
#: AwsIamForServiceAccount plugin, annotates it with the team's role).
TEAM_SERVICE_ACCOUNT = "default-editor"
GPU_QUOTA_KEY = f"requests.{GPU_RESOURCE}"
#: The namespace annotation the profile controller compares with the Profile's owner before adopting a namespace
#: that already exists.
OWNER_ANNOTATION = "owner"
KFP_TOKEN_AUDIENCE = "pipelines.kubeflow.org"
#: The labels the profile controller gives a team namespace (the dashboard's namespace-labels.yaml, plus Istio
#: sidecar injection, and the warn and audit levels every team namespace carries). Set from the start, so pods
#: created before the controller reconciles the Profile get
#: their sidecar and the webhooks that select on them; the controller never overwrites a label already set.
PROFILE_NAMESPACE_LABELS = {
    "app.kubernetes.io/part-of": "kubeflow-profile",
    "istio-injection": "enabled",
    "katib.kubeflow.org/metrics-collector-injection": "enabled",
    "pipelines.kubeflow.org/enabled": "true",
    **TEAM_POD_SECURITY,
    "serving.kubeflow.org/inferenceservice": "enabled",
}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_ROLE_PLACEHOLDER = "<<kubeflow-input:role-arn:{}>>"


def role_arn_placeholder(team: str) -> str:
    """The stand-in for a team's role ARN (created next to the cluster) until registration."""
    return _ROLE_PLACEHOLDER.format(team)


#: Stand-ins for the file system's identity (outputs of the platform's FSx) until registration.
FSX_PLACEHOLDERS = {
    "file_system_id": "<<kubeflow-input:fsx-file-system-id>>",
    "dns_name": "<<kubeflow-input:fsx-dns-name>>",
    "mount_name": "<<kubeflow-input:fsx-mount-name>>",
}


@dataclass(frozen=True)
class FsxShare:
    """The platform's FSx for Lustre file system, as a team's static volume names it."""

    capacity_gib: int
    file_system_id: str = FSX_PLACEHOLDERS["file_system_id"]
    dns_name: str = FSX_PLACEHOLDERS["dns_name"]
    mount_name: str = FSX_PLACEHOLDERS["mount_name"]


@dataclass(frozen=True, kw_only=True)
class Team:
    """One team: a namespace and Profile of the same name."""

    name: str
    owner: str  # the owner's email, as Dex reports it
    #: GPUs the namespace's pods may request at once, queued or not: the team's whole share (its nominal quota plus
    #: what it may borrow, `kueue.queues.GpuShare.ceiling`), which its Profile's ResourceQuota holds.
    gpu_ceiling: int
    s3_prefix: str  # the team's prefix in the platform bucket, without slashes at either end
    fsx_claim: str | None = None  # a PersistentVolumeClaim of the team's FSx share, in its namespace
    #: Neuron devices the namespace's pods may request at once on the platform's Neuron pools (its Profile's quota).
    neuron_devices: int = 0
    role_arn: str | None = None  # the IAM role default-editor assumes; None: a placeholder the registration resolves
    queued: bool = False  # the platform runs Kueue: the namespace is Kueue's to manage, notebooks may queue

    def __post_init__(self) -> None:
        if not _DNS_LABEL.match(self.name):
            raise ValueError(f"team name {self.name!r} must be a DNS label (lowercase letters, digits, '-')")
        if self.gpu_ceiling < 0 or self.neuron_devices < 0:
            raise ValueError(f"team {self.name}: gpu_ceiling and neuron_devices must not be negative")
        if (
            not self.s3_prefix
            or self.s3_prefix.startswith("/")
            or self.s3_prefix.endswith("/")
            or "*" in self.s3_prefix
        ):
            raise ValueError(
                f"team {self.name}: s3_prefix must be a non-empty path without leading or trailing '/' or '*'"
            )


def namespace(team: Team) -> Manifest:
    queued = {MANAGED_NAMESPACE_LABEL: MANAGED_NAMESPACE_VALUE} if team.queued else {}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": team.name,
            "labels": {**PROFILE_NAMESPACE_LABELS, netpol.TEAM_LABEL: team.name, **queued},
            "annotations": {OWNER_ANNOTATION: team.owner},
        },
    }


def profile_manifest(
    *, name: str, owner: str, gpu_ceiling: int, role_arn: Any, neuron: Mapping[str, str] | None = None
) -> Manifest:
    """A Profile owned by `owner`, its namespace capped at `gpu_ceiling` GPUs and at `neuron` Neuron devices and
    cores (`kueue.queues.neuron_ceilings`; None: none, as for a team without `neuronQuota`), and
    `default-editor` annotated with `role_arn` (a string, a placeholder, or a Pulumi output: it is only placed, never
    read). The platform's teams and team stacks both make theirs here."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "Profile",
        "metadata": {"name": name},
        "spec": {
            "owner": {"kind": "User", "name": owner},
            "resourceQuotaSpec": {"hard": {GPU_QUOTA_KEY: str(gpu_ceiling), **(neuron or neuron_ceilings())}},
            "plugins": [
                {
                    "kind": "AwsIamForServiceAccount",
                    # annotateOnly: the controller only annotates default-editor; it never edits the role's trust
                    # policy (Pulumi owns it, and the controller has no IAM permissions).
                    "spec": {"awsIamRole": role_arn, "annotateOnly": True},
                }
            ],
        },
    }


def profile(team: Team) -> Manifest:
    role_arn = team.role_arn or role_arn_placeholder(team.name)
    neuron = neuron_ceilings({NEURON_RESOURCE: team.neuron_devices})
    return profile_manifest(
        name=team.name, owner=team.owner, gpu_ceiling=team.gpu_ceiling, role_arn=role_arn, neuron=neuron
    )


def access_ml_pipeline(namespace: str) -> Manifest:
    """The PodDefault JWA preselects: a projected token notebooks use to call the Pipelines API as the team whose
    namespace it is."""
    volume = "volume-kf-pipeline-token"
    mount = "/var/run/secrets/kubeflow/pipelines"
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "PodDefault",
        "metadata": {"name": ACCESS_ML_PIPELINE, "namespace": namespace},
        "spec": {
            "desc": "Allow access to Kubeflow Pipelines",
            "selector": {"matchLabels": {ACCESS_ML_PIPELINE: "true"}},
            "volumes": [
                {
                    "name": volume,
                    "projected": {
                        "sources": [
                            {
                                "serviceAccountToken": {
                                    "path": "token",
                                    "expirationSeconds": 7200,
                                    "audience": KFP_TOKEN_AUDIENCE,
                                }
                            }
                        ]
                    },
                }
            ],
            "volumeMounts": [{"mountPath": mount, "name": volume, "readOnly": True}],
            "env": [{"name": "KF_PIPELINES_SA_TOKEN_PATH", "value": f"{mount}/token"}],
        },
    }


def queue_pod_default(namespace: str) -> Manifest:
    """A PodDefault that queues a notebook through the team's Kueue LocalQueue (offered in the spawner's
    configurations): its pod carries the queue label, Kueue holds it until the team's share admits it."""
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "PodDefault",
        "metadata": {"name": "kueue-queue", "namespace": namespace},
        "spec": {
            "desc": f"Queue for a GPU through the team's share (Kueue LocalQueue {LOCAL_QUEUE})",
            "selector": {"matchLabels": {"kueue-queue": "true"}},
            "labels": {QUEUE_LABEL: LOCAL_QUEUE},
        },
    }


def fsx_pod_default(team: Team) -> Manifest:
    """A PodDefault mounting the team's FSx claim at /fsx, offered in the spawner's configurations."""
    assert team.fsx_claim is not None
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "PodDefault",
        "metadata": {"name": "mount-fsx", "namespace": team.name},
        "spec": {
            "desc": f"Mount the team's FSx share ({team.fsx_claim}) at /fsx",
            "selector": {"matchLabels": {"mount-fsx": "true"}},
            "volumes": [{"name": "fsx", "persistentVolumeClaim": {"claimName": team.fsx_claim}}],
            "volumeMounts": [{"mountPath": "/fsx", "name": "fsx"}],
        },
    }


def fsx_claim(team: Team, share: FsxShare) -> tuple[Manifest, Manifest]:
    """The team's claim on the platform's file system, through a static volume of its own (`<claim>-<team>`, kept
    when the claim goes: deleting it never deletes the file system)."""
    assert team.fsx_claim is not None
    volume, claim = fsx_volume(
        name=f"{team.fsx_claim}-{team.name}",
        namespace=team.name,
        claim=team.fsx_claim,
        file_system_id=share.file_system_id,
        dns_name=share.dns_name,
        mount_name=share.mount_name,
        capacity_gib=share.capacity_gib,
    )
    return volume, claim


def network_policies(team: Team, monitoring_namespace: str | None) -> list[Manifest]:
    """A team namespace's policies (the same builder as every team namespace's), with a Profile's paths."""
    return list(
        netpol.team_namespace(
            team.name, monitoring_namespace=monitoring_namespace, extra=profile_allowances(team.name)
        ).values()
    )


def pod_defaults(namespace: str, *, queued: bool) -> list[Manifest]:
    """The PodDefaults of every Kubeflow team namespace (a platform team's or a team stack's): `access-ml-pipeline`,
    which the notebook form preselects, so notebooks call Pipelines as the team; `notebook-protection`, which keeps
    Karpenter from disrupting a notebook's node; with Kueue, `kueue-queue`, which queues a notebook."""
    return [
        access_ml_pipeline(namespace),
        notebook_protection(namespace),
        *([queue_pod_default(namespace)] if queued else []),
    ]


def manifests(team: Team, fsx: FsxShare | None = None, monitoring_namespace: str | None = None) -> list[Manifest]:
    """The team's objects: Namespace (with the owner annotation), its NetworkPolicies (Prometheus admitted from
    `monitoring_namespace` when there is one), Profile, PodDefaults, and with an FSx claim the volume and claim it
    mounts (which need the platform's file system: `fsx`)."""
    objects = [namespace(team), *network_policies(team, monitoring_namespace), profile(team)]
    objects += pod_defaults(team.name, queued=team.queued)
    if team.fsx_claim is not None:
        if fsx is None:
            raise ValueError(f"team {team.name}: an FSx claim needs the platform's file system")
        objects.extend(fsx_claim(team, fsx))
        objects.append(fsx_pod_default(team))
    return objects
