"""The config aggregate: everything a stack of the platform is configured with, as one frozen typed model.

`PlatformConfig` gathers every part's own model (each part owns its section), derives the facts several parts read
(the GPU pools' AMI family, the Kueue flavor, the standard tags, the subnets' CIDRs, ...) once, and runs the checks
across parts (`checks`) when it is built. `parse.parse_config` makes one from a stack's raw config.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Literal

from pydantic import Field, StrictStr, model_validator

from ..certmanager.add_on import ADD_ON as CERT_MANAGER
from ..cluster import capacity as system_capacity
from ..cluster.add_on import AddOn
from ..cluster.config import ClusterConfig
from ..config.types import ConfigModel, Environment, Identity, StatefulResources, TagValue
from ..config.validation import FieldProblems
from ..gpu.config import GpuConfig
from ..ingress.config import IngressConfig
from ..instances import prices as instance_prices
from ..instances.accelerators import ACCELERATED_FAMILIES, AcceleratedFamily, nvidia_gpu_counts
from ..karpenter.config import KarpenterConfig
from ..kubeflow.config import KubeflowConfig
from ..kueue.config import KueueConfig
from ..kueue.queues import Flavor, Manifest, cohort, gpu_share, idle_gpus, shared_flavor, team_queue
from ..network.config import NetworkConfig
from ..network.plan import plan_subnets
from ..observability.config import ObservabilityConfig
from ..observability.render import GpuPool, gpu_pools
from ..storage.config import StorageConfig
from ..tags import standard_tags
from . import checks

#: The namespace of the project's own keys in stack config (`eks-ml-platform:<key>`).
PROJECT_NAMESPACE = "eks-ml-platform"
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
            add_ons=tuple(workload for add_on in self.add_ons for workload in add_on.workloads),
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
    def add_ons(self) -> tuple[AddOn, ...]:
        """The add-ons this platform installs (`ADD_ONS`), in the order of creation."""
        return tuple(add_on for add_on, installed in ADD_ONS if installed(self))

    @property
    def cert_manager(self) -> bool:
        """Whether the platform installs cert-manager: a part that needs it is on (Kubeflow)."""
        return self.kubeflow.enabled

    @property
    def kserve(self) -> bool:
        """Whether the platform installs KServe (`kubeflow.components.kserve`, which needs Kubeflow on)."""
        return self.kubeflow.enabled and self.kubeflow.components.kserve

    @property
    def cluster_name(self) -> str:
        return self.cluster.name or f"{self.project}-{self.stack}"

    @model_validator(mode="after")
    def _check(self) -> PlatformConfig:
        """Every problem across parts (`checks`), reported at once, each under its own key."""
        images = self._gpu_node_images()
        problems = [
            *checks.region_problems(self.region, self.network.availability_zones),
            *checks.pool_zone_problems(self.karpenter, self.network),
            *checks.service_cidr_problems(self.network, self.cluster),
            *checks.node_image_problems(images),
            *checks.kueue_problems(
                self.kueue,
                self.kubeflow,
                configured="kueue" in self.model_fields_set,
                queueing=self.queueing,
                flavor=self.kueue_flavor,
                shared_pools=self.kueue_gpu_pools,
            ),
            *checks.gpu_problems(self.gpu, images, configured="gpu" in self.model_fields_set),
            *checks.storage_problems(self.storage, self.network),
            *checks.kubeflow_problems(
                self.kubeflow,
                cluster=self.cluster,
                storage=self.storage,
                ingress=self.ingress,
                karpenter=self.karpenter,
                queueing=self.queueing,
            ),
            *checks.identity_problems(self.identity, self.kubeflow),
        ]
        if (full := self.system_capacity.problem()) is not None:
            problems.append(("cluster.systemNodeGroup", full))
        problems.extend(checks.cluster_name_problems(self.cluster_name))
        if problems:
            raise FieldProblems(problems)
        return self

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


#: Every add-on the platform can install, and when it does. A new add-on is its folder (`cluster.add_on.AddOn`), its
#: pin in `components.versions`, and a line here: the program installs it, the system node sizing counts its pods,
#: and the platform model allows its Secret readers.
ADD_ONS: tuple[tuple[AddOn, Callable[[PlatformConfig], bool]], ...] = (
    (CERT_MANAGER, lambda config: config.cert_manager),
)
