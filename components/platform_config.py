"""Stack configuration: parsed once, at the edge, into frozen typed models.

`parse_config` takes the raw Pulumi config of a stack (every `namespace:key` with its string value, as Pulumi hands
it to the program) and returns a `PlatformConfig` or raises `ConfigError` listing every problem at once, each naming
its full key path and what was expected. Components never read config themselves; they take these models (or
plainer values) as arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from decimal import Decimal
from typing import Any, Literal

from pydantic import Field, StrictStr, ValidationError, model_validator
from pydantic.alias_generators import to_snake

from . import versions
from .cluster import capacity as system_capacity
from .cluster.config import CLUSTER_NAME, ClusterConfig, EndpointAccess, SystemNodeGroup
from .config.errors import ConfigError, ConfigIssue, issues_from
from .config.types import (
    ConfigModel,
    ControlPlaneLog,
    Environment,
    Identity,
    NatGateways,
    StatefulResources,
    TagValue,
)
from .config.validation import FieldProblems
from .gpu.config import BinPackingScheduler, GpuAdmission, GpuConfig, MigOptions
from .ingress.config import IngressConfig
from .instances import prices as instance_prices
from .instances.accelerators import ACCELERATED_FAMILIES, AcceleratedFamily, nvidia_gpu_counts
from .karpenter.config import KarpenterConfig
from .kubeflow.config import KubeflowConfig
from .kueue.config import KueueConfig
from .kueue.queues import Flavor, Manifest, cohort, gpu_share, idle_gpus, shared_flavor, team_queue
from .network.config import ExistingVpc, NetworkConfig
from .network.plan import plan_subnets
from .observability.config import AlertmanagerConfig, AlertThresholds, ObservabilityConfig
from .observability.render import GpuPool, gpu_pools
from .regions import region_problem
from .storage.config import BucketConfig, DataRepository, FsxConfig, StorageConfig
from .tags import standard_tags

__all__ = [
    "AlertThresholds",
    "AlertmanagerConfig",
    "BinPackingScheduler",
    "BucketConfig",
    "ClusterConfig",
    "ConfigError",
    "ConfigIssue",
    "ControlPlaneLog",
    "DataRepository",
    "EndpointAccess",
    "Environment",
    "ExistingVpc",
    "FsxConfig",
    "GpuAdmission",
    "GpuConfig",
    "Identity",
    "IngressConfig",
    "KarpenterConfig",
    "MigOptions",
    "NatGateways",
    "NetworkConfig",
    "ObservabilityConfig",
    "PlatformConfig",
    "StatefulResources",
    "StorageConfig",
    "SystemNodeGroup",
    "parse_config",
]

PROJECT_NAMESPACE = "eks-ml-platform"
#: Kubeflow 26.03 states Kubernetes 1.35 or newer.
KUBEFLOW_KUBERNETES_VERSIONS = ("1.35",)
#: Keys of the `aws:` namespace the program reads; the AWS provider is explicit, so any other `aws:` key would
#: be silently ignored by it and is rejected instead.
AWS_KEYS = ("region", "profile")
#: Fields filled in from the Pulumi context (the project and stack being run), never from stack config.
CONTEXT_KEYS = ("project", "stack")


class PlatformConfig(ConfigModel):
    """Everything a stack of the platform is configured with."""

    project: StrictStr = Field(description="the Pulumi project (from the Pulumi context, not stack config)")
    stack: StrictStr = Field(description="the Pulumi stack (from the Pulumi context, not stack config)")
    region: StrictStr = Field(
        description="the region everything is created in: a region of the `aws`, `aws-cn` or `aws-us-gov` partition "
        "as the pinned botocore lists them (a near miss is answered with the region meant)"
    )
    profile: StrictStr | None = Field(
        default=None,
        description="AWS CLI profile for the program's AWS provider and for the kubeconfig that Kubernetes and Helm "
        "use (one identity for both); none: the default credential chain. Other `aws:*` keys are refused: the "
        "provider is explicit and would ignore them; use `AWS_*` environment variables",
    )
    environment: Environment = Field(
        description="which defaults apply to the keys marked *env*: `dev` is cheap, `prod` is safe"
    )
    owner: TagValue = Field(min_length=1, description="`owner` tag on every AWS object")
    cost_center: TagValue | None = Field(
        default=None, description="`cost-center` tag on every AWS object; none: no such tag"
    )
    stateful_resources: StatefulResources = Field(
        description="what `pulumi destroy` does with stateful resources (KMS keys, log groups, buckets, file "
        "systems, volumes): `protect` refuses until they are unprotected, `retain` leaves them in AWS and forgets "
        "them, `destroy` deletes them, emptying buckets first (see [Teardown](#teardown))"
    )
    identity: Identity = Field(
        default=Identity.IRSA,
        description="how the platform's pods get AWS credentials: `irsa` (IAM roles for service accounts, through the "
        "cluster's OIDC provider) or `podIdentity` (EKS Pod Identity: the `eks-pod-identity-agent` add-on and an "
        "association per service account); team stacks follow it. `podIdentity` covers the controllers and add-ons "
        "and team stacks without a Kubeflow section; it is refused while Kubeflow makes roles (`kubeflow.teams`, "
        "`kubeflow.pipelines.artifacts: s3`) (see [Pod credentials](#pod-credentials-irsa-or-eks-pod-identity))",
    )
    network: NetworkConfig = Field(description="the VPC: created from `cidr`, or an existing one")
    cluster: ClusterConfig = Field(
        description="the EKS control plane, its API endpoint, logs, admins and system node group"
    )
    karpenter: KarpenterConfig = Field(
        default=KarpenterConfig(),
        description=(
            "the Karpenter controller, its node classes and node pools (see [Karpenter "
            "NodePools](#karpenter-nodepools))"
        ),
    )
    gpu: GpuConfig = Field(
        default=GpuConfig(),
        description="the GPU stack, installed when a NodePool launches NVIDIA GPUs (setting it with no NVIDIA pool is "
        "an error; see [GPUs](#gpus-operator-bin-packing-and-admission))",
    )
    storage: StorageConfig = Field(
        default=StorageConfig(),
        description="S3 buckets and FSx for Lustre (see [Storage and ingress](#storage-and-ingress))",
    )
    ingress: IngressConfig = Field(default=IngressConfig(), description="what routes traffic into the cluster")
    observability: ObservabilityConfig = Field(
        default=ObservabilityConfig(),
        description=(
            "kube-prometheus-stack with the GPU and Karpenter dashboards and alerts (see "
            "[Observability](#observability))"
        ),
    )
    kubeflow: KubeflowConfig = Field(
        default=KubeflowConfig(), description="Kubeflow on the platform (see [Kubeflow](#kubeflow))"
    )
    kueue: KueueConfig = Field(
        default=KueueConfig(),
        description="Kueue, the job queue that shares the GPU pools among teams (installed when a NodePool launches "
        "NVIDIA GPUs under a limit; setting it with no such pool is an error)",
    )

    @property
    def gpu_node_image(self) -> Literal["al2023", "bottlerocket"] | None:
        """The AMI family of the nodes NVIDIA pools launch (one family: the GPU Operator runs one configuration)."""
        families = self._gpu_node_images()
        return next(iter(families)) if len(families) == 1 else None

    def _gpu_node_images(self) -> set[Literal["al2023", "bottlerocket"]]:
        classes = self.karpenter.node_classes
        return {
            classes[pool.node_class].ami_family
            for pool in self.karpenter.node_pools.values()
            if pool.accelerator == "nvidia" and pool.node_class in classes
        }

    @property
    def system_capacity(self) -> system_capacity.SystemCapacity:
        """What the system node group hosts with this config, and its room."""
        gpu = self.gpu_node_image is not None
        group = self.cluster.system_node_group
        return system_capacity.system_capacity(
            instance_types=group.instance_types,
            nodes=group.desired_size,
            fsx=self.storage.fsx is not None,
            gpu_operator=gpu,
            binpack_scheduler_replicas=self.gpu.scheduler.replicas if gpu and self.gpu.scheduler.enabled else None,
            observability=self.observability.enabled,
            metrics_adapter=self.observability.metrics_adapter.enabled,
            cert_manager=self.cert_manager,
            kubeflow=self.kubeflow.enabled,
            kserve=self.kserve,
            kueue=self.queueing,
        )

    @property
    def kueue_gpu_pools(self) -> dict[str, int]:
        """The NodePools Kueue shares among teams, with their GPU limits: those that launch NVIDIA GPUs under a GPU
        limit (Kueue counts GPUs against it), labelled for its flavor (`KarpenterConfig.shared_gpu_pools`)."""
        return {name: pool.gpu_limit or 0 for name, pool in self.karpenter.shared_gpu_pools().items()}

    @property
    def kueue_flavor(self) -> Flavor | None:
        """The one ResourceFlavor of the GPU pools (`queues.shared_flavor`), or None without a GPU pool."""
        pools = self.kueue_gpu_pools
        return shared_flavor(pools.values()) if pools else None

    @property
    def queueing(self) -> bool:
        """Whether the platform runs Kueue: it is on and the GPU stack runs with a GPU pool to queue for."""
        return self.kueue.enabled and self.gpu_node_image is not None and self.kueue_flavor is not None

    def team_queues(self) -> dict[str, tuple[Manifest, Manifest]]:
        """The ClusterQueue and LocalQueue of each Kubeflow team, from the same share its Profile's quota is."""
        flavor = self.kueue_flavor
        if flavor is None:
            return {}
        return {
            name: team_queue(name, gpu_share(team.gpu_quota, team.gpu_borrowing_limit, queueing=True), flavor)
            for name, team in sorted(self.kubeflow.teams.items())
        }

    def kueue_cohort(self) -> Manifest | None:
        """The cohort with the shared pools' GPUs no team is guaranteed as its own quota (`queues.cohort`): what a
        lone team borrows up to its ceiling."""
        flavor = self.kueue_flavor
        if flavor is None:
            return None
        nominal = [team.gpu_quota for team in self.kubeflow.teams.values()]
        return cohort(flavor, idle_gpus(flavor, nominal, self.kueue.reserve))

    @property
    def cert_manager(self) -> bool:
        """Whether the platform installs cert-manager: a part that needs it is on (Kubeflow)."""
        return self.kubeflow.enabled

    def _kueue_problems(self) -> list[tuple[str, str]]:
        if self.kueue.enabled and "kueue" in self.model_fields_set and self.kueue_flavor is None:
            return [("kueue", "is configured but no NodePool launches NVIDIA GPUs under a GPU limit; remove it")]
        if self.queueing:
            return self._nominal_quota_problems()
        why = "kueue.enabled is false" if not self.kueue.enabled else "no NodePool launches NVIDIA GPUs"
        if self.kueue.reserve_set:
            return [(self.kueue.reserve_key, f"nothing queues team stacks without Kueue ({why}); remove it")]
        return [
            (f"kubeflow.teams.{name}.gpuBorrowingLimit", f"nothing lends GPUs without Kueue ({why}); remove it")
            for name, team in sorted(self.kubeflow.teams.items())
            if team.gpu_borrowing_limit is not None
        ]

    def _nominal_quota_problems(self) -> list[tuple[str, str]]:
        """Kueue guarantees every nominal quota at once: together they must fit in what the shared pools launch, or
        a team reclaiming its guarantee waits for GPUs no pool can add."""
        flavor = self.kueue_flavor
        assert flavor is not None
        teams = {name: team.gpu_quota for name, team in sorted(self.kubeflow.teams.items())}
        reserved, reserve_key = self.kueue.reserve, self.kueue.reserve_key
        total = sum(teams.values()) + reserved
        if total <= flavor.gpus:
            return []
        pools = ", ".join(f"{name}: {gpus}" for name, gpus in self.kueue_gpu_pools.items())
        quotas = " + ".join(f"kubeflow.teams.{name}.gpuQuota {gpus}" for name, gpus in teams.items())
        message = (
            f"the guaranteed GPUs ({quotas or 'no team'} + {reserve_key} {reserved} = {total}) pass what the "
            f"shared GPU pools may launch ({flavor.gpus}: {pools}); lower a quota or raise a pool's GPU limit"
        )
        # Under each key that adds to the total, so whichever was changed is named.
        keys = [key for key, part in (("kubeflow.teams", sum(teams.values())), (reserve_key, reserved)) if part]
        return [(key, message) for key in keys]

    @property
    def kserve(self) -> bool:
        """Whether the platform installs KServe (`kubeflow.components.kserve`, which needs Kubeflow on)."""
        return self.kubeflow.enabled and self.kubeflow.components.kserve

    @property
    def cluster_name(self) -> str:
        return self.cluster.name or f"{self.project}-{self.stack}"

    @model_validator(mode="after")
    def _check(self) -> PlatformConfig:
        problems: list[tuple[str, str]] = []
        problems.extend(_region_problems(self.region, self.network.availability_zones))
        for name, pool in self.karpenter.node_pools.items():
            for index, zone in enumerate(pool.zones):
                if zone not in self.network.availability_zones:
                    problems.append(
                        (
                            f"karpenter.nodePools.{name}.zones[{index}]",
                            (
                                f"{zone!r} is not one of the stack's availability zones "
                                f"{list(self.network.availability_zones)}"
                            ),
                        )
                    )
        if self.network.existing is None and self.network.cidr.overlaps(self.cluster.service_cidr):
            problems.append(
                (
                    "cluster.serviceCidr",
                    (
                        f"{self.cluster.service_cidr} overlaps the VPC CIDR {self.network.cidr}; "
                        "Kubernetes service addresses must not collide with pod and node addresses"
                    ),
                )
            )
        images = self._gpu_node_images()
        if len(images) > 1:
            problems.append(
                (
                    "karpenter.nodeClasses",
                    f"NVIDIA pools use node classes of several AMI families {sorted(images)}; use one",
                )
            )
        problems.extend(self._kueue_problems())
        if not images and "gpu" in self.model_fields_set:
            problems.append(("gpu", "is configured but no NodePool launches NVIDIA GPUs; remove it or add a GPU pool"))
        if images == {"bottlerocket"}:
            for key, value in (("gpu.mig", self.gpu.mig), ("gpu.timeSlicingReplicas", self.gpu.time_slicing_replicas)):
                if value is not None:
                    problems.append((key, "is not available on Bottlerocket, which runs its own device plugin"))
        problems.extend(self._storage_problems())
        problems.extend(self._kubeflow_problems())
        problems.extend(self._identity_problems())
        if (full := self.system_capacity.problem()) is not None:
            problems.append(("cluster.systemNodeGroup", full))
        if not CLUSTER_NAME.match(self.cluster_name):
            problems.append(
                (
                    "cluster.name",
                    (
                        f"the default name {self.cluster_name!r} (project-stack) is not a lowercase DNS-style name of "
                        "2 to 40 characters; set cluster.name"
                    ),
                )
            )
        if problems:
            raise FieldProblems(problems)
        return self

    def _identity_problems(self) -> list[tuple[str, str]]:
        """What EKS Pod Identity does not cover yet: the roles Kubeflow's own objects name (the Profiles' IRSA plugin
        annotates `default-editor`, Pipelines' manifests carry the annotation), which would keep IRSA annotations."""
        if self.identity is not Identity.POD_IDENTITY or not self.kubeflow.enabled:
            return []
        makers = []
        if self.kubeflow.teams:
            makers.append("kubeflow.teams")
        if self.kubeflow.pipelines.artifacts == "s3":
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

    def _storage_problems(self) -> list[tuple[str, str]]:
        fsx = self.storage.fsx
        if fsx is None:
            return []
        problems = []
        if fsx.availability_zone is not None and fsx.availability_zone not in self.network.availability_zones:
            problems.append(
                (
                    "storage.fsx.availabilityZone",
                    (
                        f"{fsx.availability_zone!r} is not one of the stack's availability zones "
                        f"{list(self.network.availability_zones)}"
                    ),
                )
            )
        repository = fsx.data_repository
        if repository is not None and repository.bucket not in self.storage.buckets:
            problems.append(
                (
                    "storage.fsx.dataRepository.bucket",
                    f"names no bucket in storage.buckets ({', '.join(sorted(self.storage.buckets))})",
                )
            )
        return problems

    def _kubeflow_problems(self) -> list[tuple[str, str]]:
        kubeflow = self.kubeflow
        if not kubeflow.enabled:
            return []
        problems = []
        if self.cluster.kubernetes_version not in KUBEFLOW_KUBERNETES_VERSIONS:
            problems.append(
                (
                    "kubeflow.enabled",
                    (
                        f"Kubeflow {versions.KUBEFLOW.version} needs Kubernetes "
                        f"{' or '.join(KUBEFLOW_KUBERNETES_VERSIONS)}; cluster.kubernetesVersion is "
                        f"{self.cluster.kubernetes_version}"
                    ),
                )
            )
        if (kubeflow.teams or kubeflow.pipelines.artifacts == "s3") and kubeflow.bucket not in self.storage.buckets:
            needs = "teams' prefixes and Pipelines' artifacts (pipelines.artifacts: s3)"
            if kubeflow.pipelines.artifacts != "s3":
                needs = "teams' prefixes"
            elif not kubeflow.teams:
                needs = "Pipelines' artifacts (pipelines.artifacts: s3)"
            problems.append(
                (
                    "kubeflow.bucket",
                    (
                        f"names no bucket in storage.buckets ({', '.join(sorted(self.storage.buckets))}); it holds the "
                        f"{needs}"
                    ),
                )
            )
        if kubeflow.access.mode == "alb" and not self.ingress.load_balancer_controller:
            problems.append(
                (
                    "kubeflow.access.mode",
                    (
                        "alb needs the AWS Load Balancer Controller to make the ALB; set "
                        "ingress.loadBalancerController: true or use port-forward"
                    ),
                )
            )
        ceiling = sum(pool.gpu_limit or 0 for pool in self.karpenter.node_pools.values())
        fsx_namespaces = set(self.storage.fsx.namespaces) if self.storage.fsx else set()
        for team, spec in sorted(kubeflow.teams.items()):
            # With Kueue queueing, the guaranteed quotas together are checked against the shared pools instead.
            if spec.gpu_quota > ceiling and not self.queueing:
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
            if spec.fsx_claim is not None and self.storage.fsx is None:
                problems.append(
                    (
                        f"kubeflow.teams.{team}.fsxClaim",
                        "needs the platform's FSx file system (storage.fsx), which this stack does not create",
                    )
                )
        return problems

    @property
    def fsx_zone(self) -> str | None:
        """The AZ FSx lives in (training pools that read from it belong there too)."""
        fsx = self.storage.fsx
        return None if fsx is None else fsx.availability_zone or self.network.availability_zones[0]

    @property
    def tags(self) -> dict[str, str]:
        """The standard tags of every AWS object of the stack."""
        return standard_tags(project=self.project, stack=self.stack, owner=self.owner, cost_center=self.cost_center)

    @property
    def csi_drivers(self) -> tuple[str, ...]:
        """The CSI drivers every Karpenter node starts with (their startup taints go on every NodePool)."""
        return ("ebs", "fsx") if self.storage.fsx is not None else ("ebs",)

    @property
    def gpu_pools(self) -> tuple[GpuPool, ...]:
        """Every accelerator limit of every pool, for the dashboards and alerts that compare use with it."""
        return gpu_pools(self.karpenter.node_pools)

    @property
    def gpu_hour_prices(self) -> Mapping[str, Decimal]:
        """USD per GPU-hour on demand in the stack's region, by NVIDIA instance type (pinned ones and those the stack
        adds under `karpenter.acceleratorFamilies`), for the GPU cost rules."""
        return instance_prices.gpu_hour_prices(self.region, self.accelerated_families)

    @property
    def instance_gpus(self) -> Mapping[str, int]:
        """The GPUs of each NVIDIA instance type (pinned ones and those the stack adds), for the GPU cost rules'
        count of what the pools ran."""
        return nvidia_gpu_counts(self.accelerated_families)

    @property
    def accelerated_families(self) -> Mapping[str, AcceleratedFamily]:
        """The pinned accelerated instance families and those the stack adds under `karpenter.acceleratorFamilies`."""
        return {**ACCELERATED_FAMILIES, **self.karpenter.added_families}

    @property
    def load_balancer_cidrs(self) -> tuple[str, ...]:
        """The CIDRs of the subnets the Kubeflow ALB lives in, in a VPC the stack creates: the public ones for an
        internet-facing ALB (no pod lives there), the private ones for an internal ALB (where the nodes live too). In
        an existing VPC only its owner knows: none (the allowance then takes the VPC's CIDRs, read at deploy time)."""
        network = self.network
        if network.existing is not None:
            return ()
        pairs = plan_subnets(network.cidr, network.availability_zones)
        public = self.kubeflow.access.scheme == "internet-facing"
        return tuple(str(pair.public if public else pair.private) for pair in pairs)

    @property
    def alb_reads_vpc_cidrs(self) -> bool:
        """Whether the Kubeflow ALB's sources must be read from the VPC at deploy time (the plan could not name
        them, and left a placeholder)."""
        return self.kubeflow.access.mode == "alb" and not self.load_balancer_cidrs


def _region_problems(region: Any, zones: Any) -> list[tuple[str, str]]:
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


# ------------------------------------------------------------------------------------------- environment defaults


def environment_defaults(environment: Environment, region: str, existing_vpc: bool = False) -> dict[str, Any]:
    """What an environment implies for every key the user leaves out (keys as they are written in stack config).

    An existing VPC brings its own NAT and AZs, so neither is implied for it.
    """
    if environment is Environment.DEV:
        defaults: dict[str, Any] = {
            "statefulResources": StatefulResources.DESTROY.value,
            "network": {"availabilityZones": [f"{region}a", f"{region}b"], "natGateways": NatGateways.SINGLE.value},
            "cluster": {"endpoint": {"public": True, "private": True}},
        }
    else:
        defaults = {
            "statefulResources": StatefulResources.PROTECT.value,
            "network": {
                "availabilityZones": [f"{region}a", f"{region}b", f"{region}c"],
                "natGateways": NatGateways.PER_AZ.value,
            },
            "cluster": {"endpoint": {"public": False, "private": True}},
        }
    if existing_vpc:  # its NAT and its AZs are whatever the existing subnets have: never guessed
        del defaults["network"]["natGateways"]
        del defaults["network"]["availabilityZones"]
    return defaults


def _fill_defaults(values: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    filled = dict(values)
    for key, default in defaults.items():
        if key not in filled:
            filled[key] = default
        elif isinstance(default, Mapping) and isinstance(filled[key], dict):
            filled[key] = _fill_defaults(filled[key], default)
    return filled


# ------------------------------------------------------------------------------------------------------- parsing


def _decode(value: Any) -> Any:
    """Pulumi hands structured config to the program as JSON text; scalars stay strings."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


#: Model fields the program fills from elsewhere: in the project's namespace they would be silently replaced.
_SUPPLIED = {
    **{key: f"the Pulumi {key}'s name is used" for key in CONTEXT_KEYS},
    **{key: f"it is aws:{key}" for key in AWS_KEYS},
}


#: Where the Kubeflow ALB's authentication is configured.
ALB_AUTH_PATH = "kubeflow.access.albAuth"


def named_secret_keys(values: Mapping[str, Any]) -> dict[str, str]:
    """Project config keys the stack's config names as secrets (a Kubeflow connector's `clientSecretKey`, and the
    Kubeflow ALB's), with the key path naming each; read from the raw values, so they are known even when the rest
    fails to validate."""
    kubeflow = values.get("kubeflow")
    auth = kubeflow.get("auth") if isinstance(kubeflow, Mapping) else None
    connectors = auth.get("connectors") if isinstance(auth, Mapping) else None
    named: dict[str, str] = {}
    for name, connector in sorted(connectors.items()) if isinstance(connectors, Mapping) else ():
        key = connector.get("clientSecretKey") if isinstance(connector, Mapping) else None
        if isinstance(key, str) and key:
            named.setdefault(key, f"kubeflow.auth.connectors.{name}.clientSecretKey")
    access = kubeflow.get("access") if isinstance(kubeflow, Mapping) else None
    alb_auth = access.get("albAuth") if isinstance(access, Mapping) else None
    key = alb_auth.get("clientSecretKey") if isinstance(alb_auth, Mapping) else None
    if isinstance(key, str) and key:
        named.setdefault(key, f"{ALB_AUTH_PATH}.clientSecretKey")
    return named


def secret_problems(config: PlatformConfig, raw: Mapping[str, Any], secret_keys: Collection[str]) -> list[ConfigIssue]:
    """Each secret the config names that the stack does not hold, or holds in plain text."""
    issues = []
    named = {
        f"kubeflow.auth.connectors.{name}.clientSecretKey": connector.client_secret_key
        for name, connector in sorted(config.kubeflow.auth.connectors.items())
    }
    alb_auth = config.kubeflow.access.alb_auth
    if alb_auth is not None and alb_auth.client_secret_key is not None:
        named[f"{ALB_AUTH_PATH}.clientSecretKey"] = alb_auth.client_secret_key
    for path, key in named.items():
        full_key = f"{PROJECT_NAMESPACE}:{key}"
        if full_key not in raw:
            issues.append(
                ConfigIssue(path=path, message=f"names {key}, which is not set: `pulumi config set --secret {key} ...`")
            )
        elif full_key not in secret_keys:
            issues.append(
                ConfigIssue(
                    path=path,
                    message=f"names {key}, which is set in plain text: set it again with `pulumi config set --secret "
                    f"{key} ...`",
                )
            )
    return issues


def parse_config(raw: Mapping[str, Any], *, project: str, stack: str) -> PlatformConfig:
    """Turn a stack's raw config (`namespace:key` -> value) into a `PlatformConfig`, or raise `ConfigError`."""
    issues: list[ConfigIssue] = []
    values: dict[str, Any] = {}
    aws: dict[str, Any] = {}
    for full_key in sorted(raw):
        namespace, _, key = full_key.partition(":")
        value = _decode(raw[full_key])
        if namespace == PROJECT_NAMESPACE and key in _SUPPLIED:
            issues.append(ConfigIssue(path=full_key, message=f"is not a setting: {_SUPPLIED[key]}; remove it"))
        elif namespace == PROJECT_NAMESPACE:
            values[key] = value
        elif namespace == "aws" and key in AWS_KEYS:
            aws[key] = value
        elif namespace == "aws":
            issues.append(
                ConfigIssue(
                    path=full_key,
                    message="is not read: the program's AWS provider takes only "
                    f"{', '.join('aws:' + k for k in AWS_KEYS)}; set other provider options through AWS_* "
                    "environment variables",
                )
            )
        elif namespace != "pulumi":
            issues.append(
                ConfigIssue(path=full_key, message=f"is not read by this program (its keys are {PROJECT_NAMESPACE}:*)")
            )

    for key, path in sorted(named_secret_keys(values).items()):
        if key in PlatformConfig.model_fields or to_snake(key) in PlatformConfig.model_fields:
            issues.append(ConfigIssue(path=path, message=f"names {key!r}, a setting of the platform, not a secret"))
        else:
            values.pop(key, None)  # read by the program as a secret, never parsed into the models

    region = aws.get("region")
    if region is None or region == "":
        got = "" if region is None else ", got an empty value"
        issues.append(ConfigIssue(path="aws:region", message=f"is required (e.g. 'us-west-2'){got}"))
        region = ""  # the remaining keys are still checked
    environment = values.get("environment")
    known_environment = isinstance(environment, str) and environment in {e.value for e in Environment}
    if known_environment:
        network = values.get("network")
        existing_vpc = isinstance(network, dict) and "existing" in network
        values = _fill_defaults(values, environment_defaults(Environment(str(environment)), str(region), existing_vpc))

    document = {**values, "project": project, "stack": stack, "region": region}
    if "profile" in aws:
        document["profile"] = aws["profile"]
    # Checked here as well as on the model, so a wrong AZ is reported even when other keys fail to validate.
    network = values.get("network")
    zones = network.get("availabilityZones") if isinstance(network, dict) else None
    issues.extend(ConfigIssue(path=path, message=message) for path, message in _region_problems(region, zones))
    try:
        config = PlatformConfig.model_validate(document)
    except ValidationError as exc:
        found = issues_from(exc, PlatformConfig)
        if not known_environment:  # what an environment fills in is not missing: the environment is the problem
            implied = _environment_keys(str(region))
            found = [i for i in found if not (i.path in implied and i.message.startswith("is required"))]
        issues.extend(found)
        raise ConfigError(issues) from None
    if issues:
        raise ConfigError(issues)
    return config


def _environment_keys(region: str) -> set[str]:
    """The dotted keys some environment fills in when the stack leaves them out."""

    def paths(values: dict[str, Any], prefix: str = "") -> set[str]:
        found = set()
        for key, value in values.items():
            found.add(prefix + key)
            if isinstance(value, dict):
                found |= paths(value, f"{prefix}{key}.")
        return found

    return set().union(*(paths(environment_defaults(e, region)) for e in Environment))
