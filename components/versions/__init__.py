"""Every pinned version the platform deploys, in one place, each with where it comes from: one module per what the
pins are for (`eks`: Kubernetes, add-ons and node images; `helm_charts`; `images`; `kubeflow`; `tools`: what the
offline checks run), the pin types in `pins`, and every name here (import pins from `components.versions`).

Bumping a version is a one-line change in its module plus whatever the upstream release notes ask for (for
Karpenter, the controller IAM policy moves in lock-step with the chart version).
"""

from __future__ import annotations

from . import helm_charts
from .eks import (
    AL2023_AMI,
    BOTTLEROCKET_AMI,
    DEFAULT_KUBERNETES_VERSION,
    EKS_ADDONS,
    KUBERNETES_VERSIONS,
    SYSTEM_NODE_AMIS,
    eks_addon,
    system_node_ami,
)
from .helm_charts import (
    CERT_MANAGER,
    EFA_DEVICE_PLUGIN,
    FSX_CSI_DRIVER,
    FSX_LUSTRE_VERSION,
    GPU_OPERATOR,
    KARPENTER,
    KARPENTER_CRD,
    KSERVE,
    KSERVE_CRD,
    KUBE_PROMETHEUS_STACK,
    KUEUE,
    LOAD_BALANCER_CONTROLLER,
    NEURON_HELM_CHART,
    PROMETHEUS_ADAPTER,
)
from .images import BUSYBOX, KUBE_SCHEDULER, KUBE_SCHEDULER_IMAGE, KUEUE_IMAGE
from .kubeflow import (
    ARGO_WORKFLOWS,
    COMMUNITY_DISTRIBUTION,
    JOBSET,
    KUBEFLOW,
    KUBEFLOW_IMAGES,
    KUBEFLOW_PIPELINES,
    LWS,
    SOURCES,
)
from .pins import DIGEST, ChartPin, CrdUpgrade, HelmPin, ImagePin, Pin, SourcePin
from .tools import HELM, KUBECTL, KUSTOMIZE_VERSION


def charts() -> tuple[ChartPin, ...]:
    """Every chart the platform installs."""
    return tuple(value for value in vars(helm_charts).values() if isinstance(value, ChartPin))


__all__ = [
    "AL2023_AMI",
    "ARGO_WORKFLOWS",
    "BOTTLEROCKET_AMI",
    "BUSYBOX",
    "CERT_MANAGER",
    "COMMUNITY_DISTRIBUTION",
    "DEFAULT_KUBERNETES_VERSION",
    "DIGEST",
    "EFA_DEVICE_PLUGIN",
    "EKS_ADDONS",
    "FSX_CSI_DRIVER",
    "FSX_LUSTRE_VERSION",
    "GPU_OPERATOR",
    "HELM",
    "JOBSET",
    "KARPENTER",
    "KARPENTER_CRD",
    "KSERVE",
    "KSERVE_CRD",
    "KUBECTL",
    "KUBEFLOW",
    "KUBEFLOW_IMAGES",
    "KUBEFLOW_PIPELINES",
    "KUBERNETES_VERSIONS",
    "KUBE_PROMETHEUS_STACK",
    "KUBE_SCHEDULER",
    "KUBE_SCHEDULER_IMAGE",
    "KUEUE",
    "KUEUE_IMAGE",
    "KUSTOMIZE_VERSION",
    "LOAD_BALANCER_CONTROLLER",
    "LWS",
    "NEURON_HELM_CHART",
    "PROMETHEUS_ADAPTER",
    "SOURCES",
    "SYSTEM_NODE_AMIS",
    "ChartPin",
    "CrdUpgrade",
    "HelmPin",
    "ImagePin",
    "Pin",
    "SourcePin",
    "charts",
    "eks_addon",
    "system_node_ami",
]
