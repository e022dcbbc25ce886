"""Every Helm chart the platform installs, each at an exact version from its repository, and the Lustre version of
the file systems the FSx CSI driver makes."""

from __future__ import annotations

from .pins import ChartPin, CrdUpgrade

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
