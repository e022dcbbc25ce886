"""The checks across parts: what no part's own model can see, because it takes two parts' config to know it.

Each check is a pure function of the parts it crosses (and of facts `PlatformConfig` derives from them), returning
`(key path, message)` pairs; `PlatformConfig` runs them all when it is built, so every problem is reported at once.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from .. import versions
from ..cluster.config import CLUSTER_NAME, ClusterConfig
from ..config.types import Identity
from ..gpu.config import GpuConfig
from ..ingress.config import IngressConfig
from ..karpenter.config import KarpenterConfig
from ..kubeflow.config import KubeflowConfig
from ..kueue.config import KueueConfig
from ..kueue.queues import Flavor
from ..network.config import NetworkConfig
from ..regions import region_problem
from ..scheduling import NEURON_RESOURCE
from ..storage.config import StorageConfig

#: A problem: the key path it is reported under, and what is wrong with it.
Problems = list[tuple[str, str]]

#: Kubeflow 26.03 states Kubernetes 1.35 or newer.
KUBEFLOW_KUBERNETES_VERSIONS = ("1.35",)


def region_problems(region: Any, zones: Any) -> Problems:
    """The region itself, and each availability zone that is not one of its (raw values: parsing checks them too,
    so a wrong zone is reported even when other keys fail to validate)."""
    if not region:  # missing: reported once, as required
        return []
    if problem := region_problem(region):
        return [("aws:region", problem)]
    problems = []
    for index, zone in enumerate(zones if isinstance(zones, (list, tuple)) else ()):
        if isinstance(zone, str) and not re.fullmatch(re.escape(region) + r"[a-z]", zone):
            problems.append(
                (
                    f"network.availabilityZones[{index}]",
                    f"expected an availability zone of {region} like '{region}a', got {zone!r}",
                )
            )
    return problems


def pool_zone_problems(karpenter: KarpenterConfig, network: NetworkConfig) -> Problems:
    """Each NodePool zone that is not one of the stack's availability zones."""
    problems = []
    for name, pool in karpenter.node_pools.items():
        for index, zone in enumerate(pool.zones):
            if zone not in network.availability_zones:
                problems.append(
                    (
                        f"karpenter.nodePools.{name}.zones[{index}]",
                        f"{zone!r} is not one of the stack's availability zones {list(network.availability_zones)}",
                    )
                )
    return problems


def service_cidr_problems(network: NetworkConfig, cluster: ClusterConfig) -> Problems:
    """The cluster's service CIDR must not overlap a VPC the stack creates."""
    if network.existing is not None or not network.cidr.overlaps(cluster.service_cidr):
        return []
    return [
        (
            "cluster.serviceCidr",
            (
                f"{cluster.service_cidr} overlaps the VPC CIDR {network.cidr}; "
                "Kubernetes service addresses must not collide with pod and node addresses"
            ),
        )
    ]


def node_image_problems(images: Collection[str]) -> Problems:
    """NVIDIA pools on one AMI family: the GPU Operator runs one configuration."""
    if len(images) <= 1:
        return []
    return [
        ("karpenter.nodeClasses", f"NVIDIA pools use node classes of several AMI families {sorted(images)}; use one")
    ]


def gpu_problems(gpu: GpuConfig, images: Collection[str], *, configured: bool) -> Problems:
    """The `gpu` section against the NVIDIA pools' AMI families (`images`): set only with a GPU pool, and only with
    what that family's image leaves to the operator."""
    if not images and configured:
        return [("gpu", "is configured but no NodePool launches NVIDIA GPUs; remove it or add a GPU pool")]
    if set(images) != {"bottlerocket"}:
        return []
    return [
        (key, "is not available on Bottlerocket, which runs its own device plugin")
        for key, value in (("gpu.mig", gpu.mig), ("gpu.timeSlicingReplicas", gpu.time_slicing_replicas))
        if value is not None
    ]


def kueue_problems(
    kueue: KueueConfig,
    kubeflow: KubeflowConfig,
    *,
    configured: bool,
    queueing: bool,
    flavor: Flavor | None,
    shared_pools: Mapping[str, int],
) -> Problems:
    """Kueue's keys against the pools it would share: set only when something queues (`configured`: the stack
    names the `kueue` section; `queueing`: the platform runs Kueue; `flavor`: the shared pools' one ResourceFlavor,
    None without such a pool), and the guarantees within what the pools launch."""
    if kueue.enabled and configured and flavor is None:
        return [("kueue", "is configured but no NodePool launches NVIDIA GPUs under a GPU limit; remove it")]
    if queueing:
        assert flavor is not None  # queueing needs the shared pools' flavor
        return nominal_quota_problems(kueue, kubeflow, flavor, shared_pools)
    why = "kueue.enabled is false" if not kueue.enabled else "no NodePool launches NVIDIA GPUs"
    if kueue.reserve_set:
        return [(kueue.reserve_key, f"nothing queues team stacks without Kueue ({why}); remove it")]
    return [
        (f"kubeflow.teams.{name}.gpuBorrowingLimit", f"nothing lends GPUs without Kueue ({why}); remove it")
        for name, team in sorted(kubeflow.teams.items())
        if team.gpu_borrowing_limit is not None
    ]


def nominal_quota_problems(
    kueue: KueueConfig, kubeflow: KubeflowConfig, flavor: Flavor, shared_pools: Mapping[str, int]
) -> Problems:
    """Kueue guarantees every nominal quota at once: together they must fit in what the shared pools launch, or
    a team reclaiming its guarantee waits for GPUs no pool can add."""
    teams = {name: team.gpu_quota for name, team in sorted(kubeflow.teams.items())}
    reserved, reserve_key = kueue.reserve, kueue.reserve_key
    total = sum(teams.values()) + reserved
    if total <= flavor.gpus:
        return []
    pools = ", ".join(f"{name}: {gpus}" for name, gpus in shared_pools.items())
    quotas = " + ".join(f"kubeflow.teams.{name}.gpuQuota {gpus}" for name, gpus in teams.items())
    message = (
        f"the guaranteed GPUs ({quotas or 'no team'} + {reserve_key} {reserved} = {total}) pass what the "
        f"shared GPU pools may launch ({flavor.gpus}: {pools}); lower a quota or raise a pool's GPU limit"
    )
    # Under each key that adds to the total, so whichever was changed is named.
    keys = [key for key, part in (("kubeflow.teams", sum(teams.values())), (reserve_key, reserved)) if part]
    return [(key, message) for key in keys]


def storage_problems(storage: StorageConfig, network: NetworkConfig) -> Problems:
    """FSx in one of the stack's zones, linked to one of the stack's buckets."""
    fsx = storage.fsx
    if fsx is None:
        return []
    problems = []
    if fsx.availability_zone is not None and fsx.availability_zone not in network.availability_zones:
        problems.append(
            (
                "storage.fsx.availabilityZone",
                (
                    f"{fsx.availability_zone!r} is not one of the stack's availability zones "
                    f"{list(network.availability_zones)}"
                ),
            )
        )
    repository = fsx.data_repository
    if repository is not None and repository.bucket not in storage.buckets:
        problems.append(
            (
                "storage.fsx.dataRepository.bucket",
                f"names no bucket in storage.buckets ({', '.join(sorted(storage.buckets))})",
            )
        )
    return problems


def kubeflow_problems(
    kubeflow: KubeflowConfig,
    *,
    cluster: ClusterConfig,
    storage: StorageConfig,
    ingress: IngressConfig,
    karpenter: KarpenterConfig,
    queueing: bool,
) -> Problems:
    """Kubeflow (when it is on) against what it runs on: the Kubernetes version, the bucket and file system it
    uses, the load balancer controller its ALB needs, and the GPUs its teams are promised (`queueing`: Kueue
    shares the GPU pools, and checks the teams' guarantees itself)."""
    if not kubeflow.enabled:
        return []
    problems = []
    if cluster.kubernetes_version not in KUBEFLOW_KUBERNETES_VERSIONS:
        problems.append(
            (
                "kubeflow.enabled",
                (
                    f"Kubeflow {versions.KUBEFLOW.version} needs Kubernetes "
                    f"{' or '.join(KUBEFLOW_KUBERNETES_VERSIONS)}; cluster.kubernetesVersion is "
                    f"{cluster.kubernetes_version}"
                ),
            )
        )
    problems.extend(_kubeflow_bucket_problems(kubeflow, storage))
    if kubeflow.access.mode == "alb" and not ingress.load_balancer_controller:
        problems.append(
            (
                "kubeflow.access.mode",
                (
                    "alb needs the AWS Load Balancer Controller to make the ALB; set "
                    "ingress.loadBalancerController: true or use port-forward"
                ),
            )
        )
    ceiling = sum(pool.gpu_limit or 0 for pool in karpenter.node_pools.values())
    problems.extend(_kubeflow_team_problems(kubeflow, storage, ceiling=None if queueing else ceiling))
    problems.extend(neuron_quota_problems(kubeflow, karpenter))
    return problems


def neuron_quota_problems(kubeflow: KubeflowConfig, karpenter: KarpenterConfig) -> Problems:
    """The teams' Neuron quotas together within the devices the platform's Neuron pools launch: nothing queues
    Neuron work (Kueue leaves it to each namespace's quota), so a quota the pools cannot back at once is a share
    that waits on another team's pods to finish, first come, first served."""
    quotas = {name: team.neuron_quota for name, team in sorted(kubeflow.teams.items()) if team.neuron_quota}
    if not quotas:
        return []
    pools = {
        name: pool.accelerator_limits.get(NEURON_RESOURCE, 0)
        for name, pool in sorted(karpenter.node_pools.items())
        if pool.accelerator == "neuron"
    }
    devices = sum(pools.values())
    if sum(quotas.values()) <= devices:
        return []
    launched = ", ".join(f"{name}: {limit}" for name, limit in pools.items()) or "no NodePool launches Neuron"
    asked = " + ".join(f"kubeflow.teams.{name}.neuronQuota {n}" for name, n in quotas.items())
    message = (
        f"the teams' Neuron quotas ({asked} = {sum(quotas.values())}) pass the Neuron devices the NodePools may "
        f"launch ({devices}; {launched}; a pool counts by its `{NEURON_RESOURCE}` limit); lower a quota or raise a "
        f"Neuron pool's `limits.{NEURON_RESOURCE}`"
    )
    return [(f"kubeflow.teams.{name}.neuronQuota", message) for name in quotas]


def _kubeflow_bucket_problems(kubeflow: KubeflowConfig, storage: StorageConfig) -> Problems:
    """The bucket Kubeflow's teams and Pipelines' artifacts use must be one of the stack's."""
    if not (kubeflow.teams or kubeflow.pipelines.artifacts == "s3") or kubeflow.bucket in storage.buckets:
        return []
    needs = "teams' prefixes and Pipelines' artifacts (pipelines.artifacts: s3)"
    if kubeflow.pipelines.artifacts != "s3":
        needs = "teams' prefixes"
    elif not kubeflow.teams:
        needs = "Pipelines' artifacts (pipelines.artifacts: s3)"
    return [
        (
            "kubeflow.bucket",
            f"names no bucket in storage.buckets ({', '.join(sorted(storage.buckets))}); it holds the {needs}",
        )
    ]


def _kubeflow_team_problems(kubeflow: KubeflowConfig, storage: StorageConfig, *, ceiling: int | None) -> Problems:
    """Each team's GPU quota within every GPU pool together (`ceiling`; None: Kueue checks the guaranteed quotas
    together against the shared pools instead), its namespace Kubeflow's alone, its FSx claim on a file system."""
    problems = []
    fsx_namespaces = set(storage.fsx.namespaces) if storage.fsx else set()
    for team, spec in sorted(kubeflow.teams.items()):
        if ceiling is not None and spec.gpu_quota > ceiling:
            problems.append(
                (
                    f"kubeflow.teams.{team}.gpuQuota",
                    f"{spec.gpu_quota} GPUs is more than every GPU NodePool together may run ({ceiling})",
                )
            )
        if team in fsx_namespaces:
            problems.append(
                (
                    f"kubeflow.teams.{team}",
                    (
                        "is also in storage.fsx.namespaces: both would create the namespace; Kubeflow creates its "
                        "teams' namespaces itself, so name the team differently"
                    ),
                )
            )
        if spec.fsx_claim is not None and storage.fsx is None:
            problems.append(
                (
                    f"kubeflow.teams.{team}.fsxClaim",
                    "needs the platform's FSx file system (storage.fsx), which this stack does not create",
                )
            )
    return problems


def identity_problems(identity: Identity, kubeflow: KubeflowConfig) -> Problems:
    """What EKS Pod Identity does not cover yet: the roles Kubeflow's own objects name (the Profiles' IRSA plugin
    annotates `default-editor`, Pipelines' manifests carry the annotation), which would keep IRSA annotations."""
    if identity is not Identity.POD_IDENTITY or not kubeflow.enabled:
        return []
    makers = []
    if kubeflow.teams:
        makers.append("kubeflow.teams")
    if kubeflow.pipelines.artifacts == "s3":
        makers.append("kubeflow.pipelines.artifacts: s3")
    if not makers:
        return []
    return [
        (
            "identity",
            (
                f"podIdentity does not cover the roles Kubeflow makes yet ({', '.join(makers)}): their service "
                "accounts would keep IRSA annotations; use irsa, or run Kubeflow without them"
            ),
        )
    ]


def cluster_name_problems(name: str) -> Problems:
    """The cluster's name (checked here for the default, project-stack, which no key holds)."""
    if CLUSTER_NAME.match(name):
        return []
    return [
        (
            "cluster.name",
            (
                f"the default name {name!r} (project-stack) is not a lowercase DNS-style name of "
                "2 to 40 characters; set cluster.name"
            ),
        )
    ]
