"""What the system node group hosts, and whether it fits (pure: config in, figures out).

Nothing grows the system node group (Karpenter never runs on capacity it manages), so a controller that does not fit
stays Pending for good. The requests of everything pinned to the system nodes are summed here, from the values this
package sets (defined here once and read by the components) and from the pinned charts' and add-ons' defaults, and
compared with what the nodes can allocate, with every node up and with one lost.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Requests:
    """CPU in millicores and memory in MiB, as a pod's containers request them together."""

    cpu_m: int
    memory_mi: int

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.cpu_m + other.cpu_m, self.memory_mi + other.memory_mi)

    def __mul__(self, count: int) -> Requests:
        return Requests(self.cpu_m * count, self.memory_mi * count)

    def fits_in(self, other: Requests) -> bool:
        return self.cpu_m <= other.cpu_m and self.memory_mi <= other.memory_mi

    def __str__(self) -> str:
        return f"{self.cpu_m / 1000:.2f} vCPU, {self.memory_mi / 1024:.1f} GiB"


# Requests this package sets in its own values (the components read them from here).
KARPENTER_CONTROLLER = Requests(1000, 1024)
KARPENTER_REPLICAS = 2
PROMETHEUS = Requests(500, 2048)
#: Kueue's controller manager: two replicas with leader election (its webhooks fail closed in team namespaces, so one
#: is always up). CPU near what it uses idle, as for the other light controllers here (cert-manager's): the chart's
#: 500m would be a fifth of a system node's room for a controller that reconciles a few teams' queues; no CPU limit,
#: so it takes more when admitting. Memory as the chart requests it.
KUEUE = Requests(35, 512)
KUEUE_REPLICAS = 2
BINPACK_SCHEDULER = Requests(100, 128)
#: metrics-server (the EKS community add-on): two replicas, as the add-on runs by default (kept explicit in its
#: configuration); each requests what the upstream chart's values.yaml sets (100m / 200Mi).
METRICS_SERVER = Requests(100, 200)
METRICS_SERVER_REPLICAS = 2
#: prometheus-adapter, serving one custom metric.
METRICS_ADAPTER = Requests(50, 128)
METRICS_ADAPTER_REPLICAS = 2


@dataclass(frozen=True)
class Sizing:
    """What one container requests, and the memory it may not pass (a leaking controller is killed and restarted
    instead of taking its node's memory from every other controller there)."""

    requests: Requests
    memory_limit_mi: int

    def values(self) -> dict[str, dict[str, str]]:
        """As a container's `resources`."""
        return {"requests": dict(quantity(self.requests)), "limits": {"memory": f"{self.memory_limit_mi}Mi"}}


# Controllers whose charts set no resources. Requests are the figures each pinned chart's values.yaml suggests in
# its commented-out `resources` example; memory limits are that example's where it gives one at least twice the
# request, else twice the request (these controllers cache cluster objects, which grow with the cluster).
#: aws-load-balancer-controller values.yaml `resources` example: 100m / 128Mi.
LB_CONTROLLER = Sizing(Requests(100, 128), 256)
LB_CONTROLLER_REPLICAS = 2
#: kube-prometheus-stack's grafana subchart: `resources` example 100m / 128Mi; `sidecar.resources` example
#: 50m / 50Mi with a 100Mi limit, for each of the dashboards and datasources sidecars.
GRAFANA = Sizing(Requests(100, 128), 256)
GRAFANA_SIDECAR = Sizing(Requests(50, 50), 100)
#: kube-state-metrics subchart `resources` example: 10m / 32Mi, 64Mi limit.
KUBE_STATE_METRICS = Sizing(Requests(10, 32), 64)
#: kube-prometheus-stack `prometheusOperator.resources` example: 100m / 100Mi, 200Mi limit.
PROMETHEUS_OPERATOR = Sizing(Requests(100, 100), 200)
#: prometheus-node-exporter subchart `resources` example: 100m / 30Mi, 50Mi limit (on every node).
NODE_EXPORTER = Sizing(Requests(100, 30), 60)
#: Alertmanager: kube-prometheus-stack's `alertmanager.alertmanagerSpec.resources` example asks 400Mi of memory;
#: it names no CPU figure, and Alertmanager routing a few alerts a minute uses a few millicores.
ALERTMANAGER = Sizing(Requests(20, 400), 800)
#: Prometheus' memory limit (its request is `PROMETHEUS`): room for the head block of a platform this size.
PROMETHEUS_MEMORY_LIMIT_MI = 4096
#: Istio's CNI node agent, as Kubeflow's Istio manifests request it (100m / 100Mi, no limit); the limit is ours.
ISTIO_CNI = Sizing(Requests(100, 100), 200)


@dataclass(frozen=True)
class Workload:
    """Pods pinned to the system nodes: `replicas` of a Deployment, or one per node for a DaemonSet (replicas 0)."""

    name: str
    requests: Requests
    replicas: int
    source: str

    @property
    def daemon_set(self) -> bool:
        return self.replicas == 0


def _chart(name: str) -> str:
    return f"{name} chart values.yaml at the version pinned in components/versions/"


_ADDONS = "EKS managed add-on defaults (kubectl -n kube-system get deploy,ds -o yaml on a new cluster)"
#: Where the figures of workloads the preview does not render come from (the model cannot check them).
ADDON_SOURCE = _ADDONS

#: Always there: EKS add-ons and what runs on every node.
BASE_WORKLOADS: tuple[Workload, ...] = (
    Workload("karpenter", KARPENTER_CONTROLLER, KARPENTER_REPLICAS, "components/karpenter/component.py values"),
    Workload("coredns", Requests(100, 70), 2, _ADDONS),
    Workload("metrics-server", METRICS_SERVER, METRICS_SERVER_REPLICAS, _ADDONS),
    # ebs-plugin and its five sidecars, 10m / 40Mi each.
    Workload("ebs-csi-controller", Requests(60, 240), 2, _ADDONS),
    Workload("aws-node", Requests(25, 0), 0, _ADDONS),
    Workload("kube-proxy", Requests(100, 0), 0, _ADDONS),
    Workload("ebs-csi-node", Requests(30, 120), 0, _ADDONS),
    # aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent values.yaml v1.7.0 nodeAgent.resources.
    Workload("eks-node-monitoring-agent", Requests(10, 30), 0, _ADDONS),
    Workload(
        "aws-load-balancer-controller",
        LB_CONTROLLER.requests,
        LB_CONTROLLER_REPLICAS,
        "components/ingress/component.py values",
    ),
)
FSX_WORKLOADS: tuple[Workload, ...] = (
    # driver, provisioner, resizer, liveness probe
    Workload("fsx-csi-controller", Requests(40, 136), 2, _chart("aws-fsx-csi-driver")),
    # driver, node-driver-registrar, liveness probe
    Workload("fsx-csi-node", Requests(30, 104), 0, _chart("aws-fsx-csi-driver")),
)
GPU_OPERATOR_WORKLOADS: tuple[Workload, ...] = (
    Workload("gpu-operator", Requests(200, 100), 1, _chart("gpu-operator")),
    Workload("node-feature-discovery-master", Requests(100, 128), 1, _chart("gpu-operator")),
    Workload("node-feature-discovery-gc", Requests(10, 128), 1, _chart("gpu-operator")),
)
_OBSERVABILITY_VALUES = "components/observability/component.py values"
#: kube-prometheus-stack's pods, each sized by the platform's values (the chart sizes none).
OBSERVABILITY_WORKLOADS: tuple[Workload, ...] = (
    Workload("prometheus", PROMETHEUS, 1, _OBSERVABILITY_VALUES),
    Workload("alertmanager", ALERTMANAGER.requests, 1, _OBSERVABILITY_VALUES),
    Workload("prometheus-operator", PROMETHEUS_OPERATOR.requests, 1, _OBSERVABILITY_VALUES),
    Workload("kube-state-metrics", KUBE_STATE_METRICS.requests, 1, _OBSERVABILITY_VALUES),
    Workload("grafana", GRAFANA.requests + GRAFANA_SIDECAR.requests * 2, 1, _OBSERVABILITY_VALUES),
    Workload("node-exporter", NODE_EXPORTER.requests, 0, _OBSERVABILITY_VALUES),
)
#: Kubeflow's Istio CNI agent runs on every node, the system nodes included.
KUBEFLOW_WORKLOADS: tuple[Workload, ...] = (
    Workload("istio-cni-node", ISTIO_CNI.requests, 0, "components/kubeflow/transform.py (Kubeflow's Istio)"),
)
ADAPTER = Workload(
    "prometheus-adapter", METRICS_ADAPTER, METRICS_ADAPTER_REPLICAS, "components/observability/adapter.py values"
)
KUEUE_WORKLOAD = Workload("kueue-controller-manager", KUEUE, KUEUE_REPLICAS, "components/kueue/values.py")


#: KServe's controller: the manager and its kube-rbac-proxy, 100m / 300Mi each (the chart's defaults, kept), at the
#: replicas `components.kserve` holds it at.
KSERVE_REPLICAS = 2
KSERVE = Workload("kserve-controller-manager", Requests(200, 600), KSERVE_REPLICAS, _chart("kserve"))


def binpack_scheduler(replicas: int) -> Workload:
    return Workload("binpack-scheduler", BINPACK_SCHEDULER, replicas, "components/gpu/scheduler.py")


# ------------------------------------------------------------------------------------------- node allocatable

#: vCPUs by instance size, and GiB of memory per vCPU by family letter, for the general-purpose, compute and memory
#: families the system node group runs on (EC2 instance types pages: m = 4 GiB, c = 2 GiB, r = 8 GiB per vCPU).
_VCPUS = MappingProxyType(
    {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "12xlarge": 48, "16xlarge": 64}
)
_GIB_PER_VCPU = MappingProxyType({"m": 4, "c": 2, "r": 8})
#: Pods per node under the VPC CNI without prefix delegation (ENIs × (IPs per ENI − 1) + 2), by size, for the
#: 5th-generation-and-later m, c and r families (amazon-eks-ami eni-max-pods.txt).
_MAX_PODS = MappingProxyType(
    {"large": 29, "xlarge": 58, "2xlarge": 58, "4xlarge": 234, "8xlarge": 234, "12xlarge": 234, "16xlarge": 737}
)
_FAMILY = re.compile(r"^(?P<letter>[mcr])(?P<generation>[5-8])[a-z]*$")


def node_capacity(instance_type: str) -> Requests | None:
    """What a node of `instance_type` offers pods: its capacity less kube-reserved and the eviction threshold, as
    the EKS AL2023 AMI computes them (CPU: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of
    the rest; memory: 255 MiB + 11 MiB per pod, and 100 MiB hard eviction). None for a type not in the tables."""
    family, _, size = instance_type.partition(".")
    match = _FAMILY.match(family)
    if match is None or size not in _VCPUS:
        return None
    vcpus = _VCPUS[size]
    return allocatable(vcpus=vcpus, memory_mi=vcpus * _GIB_PER_VCPU[match["letter"]] * 1024, max_pods=_MAX_PODS[size])


def allocatable(*, vcpus: int, memory_mi: int, max_pods: int) -> Requests:
    """What a node with this capacity offers pods, as the EKS AL2023 AMI reserves (see `node_capacity`)."""
    reserved_cpu = 60 + (10 if vcpus >= 2 else 0) + 5 * min(max(vcpus - 2, 0), 2) + 2.5 * max(vcpus - 4, 0)
    reserved_memory = 255 + 11 * max_pods + 100
    return Requests(int(vcpus * 1000 - reserved_cpu), memory_mi - reserved_memory)


@dataclass(frozen=True)
class SystemCapacity:
    """The system node group's load and room."""

    workloads: tuple[Workload, ...]
    nodes: int
    #: Per node, for the smallest instance type the group may launch (None: a type the tables do not know).
    per_node: Requests | None
    instance_type: str

    @property
    def requests(self) -> Requests:
        """Everything pinned to the system nodes, DaemonSets counted once per node."""
        total = Requests(0, 0)
        for workload in self.workloads:
            total = total + workload.requests * (self.nodes if workload.daemon_set else workload.replicas)
        return total

    def room(self, nodes: int) -> Requests | None:
        return None if self.per_node is None else self.per_node * nodes

    def summary(self) -> str:
        if self.per_node is None:
            return f"system nodes: requests {self.requests}; {self.instance_type} is not in the sizing tables"
        return (
            f"system nodes: requests {self.requests} of {self.room(self.nodes)} allocatable on {self.nodes} x "
            f"{self.instance_type} ({self.room(self.nodes - 1)} with one node lost)"
        )

    def problem(self) -> str | None:
        """Why the controllers cannot all run even with every node up."""
        room = self.room(self.nodes)
        if room is not None and not self.requests.fits_in(room):
            return (
                f"the controllers pinned to the system nodes request {self.requests}, more than {self.nodes} x "
                f"{self.instance_type} allocate ({room}); nothing grows this group, so pods would stay Pending: "
                "raise desiredSize or choose larger instanceTypes"
            )
        return None

    def warning(self) -> str | None:
        """Why losing one node would leave controllers Pending."""
        room = self.room(self.nodes - 1)
        if room is not None and self.problem() is None and not self.requests.fits_in(room):
            return (
                f"with one of the {self.nodes} system nodes lost, {room} remain for {self.requests} of requests: "
                "some controllers would stay Pending until it is replaced"
            )
        return None


def smallest(instance_types: tuple[str, ...]) -> str:
    """The instance type with the least room (the group may launch any of them)."""

    def size(name: str) -> tuple[int, int]:
        room = node_capacity(name)
        return (0, 0) if room is None else (room.cpu_m, room.memory_mi)

    return min(instance_types, key=size)


def system_capacity(
    *,
    instance_types: tuple[str, ...],
    nodes: int,
    fsx: bool,
    gpu_operator: bool,
    binpack_scheduler_replicas: int | None,
    observability: bool,
    metrics_adapter: bool = False,
    add_ons: tuple[Workload, ...] = (),
    kubeflow: bool = False,
    kserve: bool = False,
    kueue: bool = False,
) -> SystemCapacity:
    workloads = list(BASE_WORKLOADS)
    if kueue:
        workloads.append(KUEUE_WORKLOAD)
    workloads += add_ons
    if kubeflow:
        workloads += KUBEFLOW_WORKLOADS
    if kserve:
        workloads.append(KSERVE)
    if fsx:
        workloads += FSX_WORKLOADS
    if gpu_operator:
        workloads += GPU_OPERATOR_WORKLOADS
    if binpack_scheduler_replicas:
        workloads.append(binpack_scheduler(binpack_scheduler_replicas))
    if observability:
        workloads += OBSERVABILITY_WORKLOADS
        if metrics_adapter:
            workloads.append(ADAPTER)
    instance_type = smallest(instance_types)
    return SystemCapacity(tuple(workloads), nodes, node_capacity(instance_type), instance_type)


def quantity(requests: Requests) -> Mapping[str, str]:
    """Requests as a Kubernetes resource list."""
    return {"cpu": f"{requests.cpu_m}m", "memory": f"{requests.memory_mi}Mi"}
