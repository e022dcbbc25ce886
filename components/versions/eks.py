"""Pins of what EKS runs: the Kubernetes versions, the managed add-ons' builds per version, and the node images (the
AL2023 and Bottlerocket AMI releases, and the system node group's release per version)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .pins import Pin

#: Kubernetes minor versions this package is tested against (Kubeflow 26.03 needs 1.35: config refuses it on 1.34); each
#: version needs its own coredns / kube-proxy add-on builds below.
KUBERNETES_VERSIONS: tuple[str, ...] = ("1.34", "1.35")
#: 1.35: standard EKS support for 1.34 ends on 2026-12-02
#: (docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html).
DEFAULT_KUBERNETES_VERSION = "1.35"

_EKS_ADDON_DOCS = "https://docs.aws.amazon.com/eks/latest/userguide/managing-{page}.html"
_EBS_CSI_SOURCE = "aws eks describe-addon-versions --addon-name aws-ebs-csi-driver --kubernetes-version {k8s}"
#: The node monitoring agent's build, as its chart (aws/eks-node-monitoring-agent, charts/eks-node-monitoring-agent,
#: nodeAgent.image.tag at v1.7.0) and `aws eks describe-addon-versions --addon-name eks-node-monitoring-agent` name it.
_NODE_MONITORING_SOURCE = "https://github.com/aws/eks-node-monitoring-agent/releases/tag/v1.7.0"
_POD_IDENTITY_SOURCE = "aws eks describe-addon-versions --addon-name eks-pod-identity-agent --kubernetes-version {k8s}"
#: The EKS community add-on of kubernetes-sigs/metrics-server (EKS User Guide, community-addons.html and
#: metrics-server.html); its build as `aws eks describe-addon-versions --addon-name metrics-server` lists it.
_METRICS_SERVER_SOURCE = "aws eks describe-addon-versions --addon-name metrics-server --kubernetes-version {k8s}"


def _addons(k8s: str, *, kube_proxy: str, coredns: str) -> Mapping[str, Pin]:
    return MappingProxyType(
        {
            # One build covers Kubernetes 1.29 to 1.35.
            "vpc-cni": Pin("vpc-cni", "v1.21.1-eksbuild.7", _EKS_ADDON_DOCS.format(page="vpc-cni")),
            "kube-proxy": Pin("kube-proxy", kube_proxy, _EKS_ADDON_DOCS.format(page="kube-proxy")),
            "coredns": Pin("coredns", coredns, _EKS_ADDON_DOCS.format(page="coredns")),
            "aws-ebs-csi-driver": Pin("aws-ebs-csi-driver", "v1.62.0-eksbuild.1", _EBS_CSI_SOURCE.format(k8s=k8s)),
            # Sets the node conditions (AcceleratedHardwareReady, KernelReady, ...) Karpenter's node repair acts on.
            "eks-node-monitoring-agent": Pin("eks-node-monitoring-agent", "v1.7.0-eksbuild.1", _NODE_MONITORING_SOURCE),
            # Installed with `identity: podIdentity` only; one build serves Kubernetes 1.34 to 1.36.
            "eks-pod-identity-agent": Pin(
                "eks-pod-identity-agent", "v1.3.10-eksbuild.3", _POD_IDENTITY_SOURCE.format(k8s=k8s)
            ),
            # Serves metrics.k8s.io (CPU and memory) to HPAs and `kubectl top`; metrics-server v0.8.1, one build for
            # every supported minor version.
            "metrics-server": Pin("metrics-server", "v0.8.1-eksbuild.4", _METRICS_SERVER_SOURCE.format(k8s=k8s)),
        }
    )


#: EKS managed add-ons, per Kubernetes minor version. coredns and kube-proxy builds are tied to the minor version;
#: vpc-cni and the EBS CSI driver are not, but are listed per version so an upgrade is reviewed as one table.
EKS_ADDONS: Mapping[str, Mapping[str, Pin]] = MappingProxyType(
    {
        "1.34": _addons("1.34", kube_proxy="v1.34.6-eksbuild.13", coredns="v1.13.2-eksbuild.11"),
        "1.35": _addons("1.35", kube_proxy="v1.35.3-eksbuild.13", coredns="v1.14.3-eksbuild.3"),
    }
)


def eks_addon(kubernetes_version: str, addon: str) -> Pin:
    """The pinned build of an EKS managed add-on for a Kubernetes minor version."""
    try:
        return EKS_ADDONS[kubernetes_version][addon]
    except KeyError as exc:
        raise KeyError(f"no pinned {addon} add-on for Kubernetes {kubernetes_version}") from exc


#: EKS-optimised AMI releases the EC2NodeClasses pin by alias (`al2023@<version>`, `bottlerocket@<version>`).
#: Pinned rather than `@latest`, which drifts every node whenever AWS publishes a new AMI.
AL2023_AMI = Pin("al2023", "v20260801", "https://github.com/awslabs/amazon-eks-ami/releases/tag/v20260801")
#: The same AL2023 release for the system node group, as EKS names it (`<kubelet version>-<release date>`, the node
#: group's release_version), per Kubernetes minor version.
SYSTEM_NODE_AMIS: Mapping[str, Pin] = MappingProxyType(
    {
        minor: Pin("AL2023_x86_64_STANDARD", f"{kubelet}-{AL2023_AMI.version.removeprefix('v')}", AL2023_AMI.source)
        for minor, kubelet in (("1.34", "1.34.6"), ("1.35", "1.35.3"))
    }
)


def system_node_ami(kubernetes_version: str) -> Pin:
    """The pinned EKS-optimised AMI release of the system node group for a Kubernetes minor version."""
    return SYSTEM_NODE_AMIS[kubernetes_version]


BOTTLEROCKET_AMI = Pin(
    "bottlerocket", "v1.64.0", "https://github.com/bottlerocket-os/bottlerocket/releases/tag/v1.64.0"
)
