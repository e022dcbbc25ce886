"""The running platform, as the offline preview's output says it will be: every object (the stack's own, and each
Helm release rendered with its values), the pods they run, and the nodes those pods can get.

Operators and managed add-ons create pods no manifest shows; those are derived from what does show them: the GPU
Operator's operands from the ClusterPolicy its chart renders, the EKS add-ons' pods from their pinned default
configuration (`data/eks_addons.json`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from . import addresses, helm
from .addresses import VpcAddresses
from .admission import notebook_pods, trainer_pods
from .nodes import NodeKind, node_kinds
from .pipeline_pods import pipeline_pods
from .workloads import Workload, from_object, from_pod_template

#: The GPU Operator's operands: the ClusterPolicy field that turns each on, and the node label the operator sets
#: (to "true") on every node with an NVIDIA GPU that the operand should run on. The operator puts each operand's
#: DaemonSet on exactly those nodes and *replaces* its tolerations with `spec.daemonsets.tolerations`
#: (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels, controllers/object_controls.go).
GPU_OPERANDS: Mapping[str, str] = {
    "driver": "driver",
    "toolkit": "container-toolkit",
    "devicePlugin": "device-plugin",
    "dcgm": "dcgm",
    "dcgmExporter": "dcgm-exporter",
    "gfd": "gpu-feature-discovery",
    "migManager": "mig-manager",
    "nodeStatusExporter": "node-status-exporter",
    "validator": "operator-validator",
}
#: Operands that run whenever the operator does, whatever their `enabled` says (the validator has none).
_ALWAYS_ON = ("validator",)
#: Node Feature Discovery labels a node with an NVIDIA PCI device (vendor 0x10de) like this; the operator reads it.
NVIDIA_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"
GPU_DEPLOY_LABEL = "nvidia.com/gpu.deploy.{}"
POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"


@dataclass
class Platform:
    """What one or more previews (a platform stack and the team stacks on it) put in one cluster."""

    objects: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    nodes: list[NodeKind] = field(default_factory=list)
    #: Releases the model could not render (no chart copy or no Helm): their pods are not judged.
    unrendered: dict[str, str] = field(default_factory=dict)
    #: The VPC's ranges and subnets, from the first preview that records them (the platform's; team stacks make no
    #: VPC), which NetworkPolicies' address ranges are judged against; a stand-in when none does.
    vpc: VpcAddresses = field(default_factory=VpcAddresses.stand_in)
    #: (namespace, service account) of every EKS Pod Identity association the stacks make.
    pod_identity: set[tuple[str, str]] = field(default_factory=set)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for _, obj in self.objects if obj.get("kind") == kind]


def _yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if isinstance(doc, dict)]


def _kubernetes_version(resources_json: Iterable[Mapping[str, Any]]) -> str:
    for resource in resources_json:
        if resource["type"] == "aws:eks/cluster:Cluster":
            return f"{resource['inputs'].get('version') or '1.35'}.0"
    return "1.35.0"


def _addon_facts() -> dict[str, Any]:
    return dict(json.loads(resources.files(__package__ or "").joinpath("data/eks_addons.json").read_text()))


def _configured(pod: Mapping[str, Any], configuration: str | None) -> dict[str, Any]:
    """The keys of the add-on's `configurationValues` that the facts say set this pod's fields (`configured`)."""
    values = json.loads(configuration) if configuration else {}
    return {key: values[key] for key in pod.get("configured", ()) if key in values}


def _addon_workloads(addons: Mapping[str, Mapping[str, Any]]) -> list[Workload]:
    """The add-ons' pods, by add-on name and the inputs the stack gives each."""
    facts = _addon_facts()
    found = []
    for addon, inputs in addons.items():
        for pod in facts["addons"].get(addon, ()):
            configured = _configured(pod, inputs.get("configurationValues"))
            template = {
                "metadata": {"labels": {"eksml.io/model-role": pod.get("role", ""), **pod.get("labels", {})}},
                "spec": {
                    "tolerations": configured.get("tolerations", pod["tolerations"]),
                    "nodeSelector": configured.get("nodeSelector", {}),
                    **({"affinity": pod["affinity"]} if "affinity" in pod else {}),
                    "containers": [{"name": i, "image": facts["registry"] + i} for i in pod["images"]],
                },
            }
            replicas = None if pod["kind"] == "DaemonSet" else configured.get("replicas", pod.get("replicas", 1))
            found.append(
                from_pod_template(f"eks-addon/{addon}", pod["kind"], pod["namespace"], pod["name"], replicas, template)
            )
    return found


def _addon_objects(addon_names: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    """What the add-ons create besides their pods that the model judges (an APIService and its Service)."""
    objects = _addon_facts().get("objects", {})
    return [(f"eks-addon/{addon}", dict(obj)) for addon in addon_names for obj in objects.get(addon, ())]


def operand_workloads(origin: str, policy: Mapping[str, Any]) -> list[Workload]:
    """The DaemonSets the GPU Operator makes from a ClusterPolicy."""
    spec = policy.get("spec") or {}
    tolerations = (spec.get("daemonsets") or {}).get("tolerations") or []
    found = []
    for field_name, label in GPU_OPERANDS.items():
        section = spec.get(field_name) or {}
        if not (section.get("enabled", False) or field_name in _ALWAYS_ON):
            continue
        image = (
            f"{section.get('repository', 'nvcr.io/nvidia')}/{section.get('image', label)}:{section.get('version', '')}"
        )
        template = {
            "metadata": {"labels": {"app": f"nvidia-{label}"}},
            "spec": {
                "nodeSelector": {GPU_DEPLOY_LABEL.format(label): "true"},
                "tolerations": tolerations,
                "containers": [{"name": label, "image": image}],
            },
        }
        found.append(from_pod_template(origin, "DaemonSet", "gpu-operator", f"nvidia-{label}", None, template))
    return found


@dataclass(frozen=True)
class StackView:
    """What one stack's offline preview recorded, as the model reads it: its resources (type, name, inputs), the
    Kubernetes objects it creates itself (with where each was written) and its Helm releases."""

    resources: Sequence[Mapping[str, Any]]
    manifests: Sequence[tuple[str, dict[str, Any]]]
    releases: Sequence[Mapping[str, Any]]


def read_folder(folder: Path) -> StackView:
    """A preview folder (`python -m components.preview --out`) read back."""
    listed = json.loads((folder / "resources.json").read_text())["resources"]
    manifests = [
        (f"manifests/{path.name}", doc)
        for path in sorted((folder / "manifests").glob("*.yaml"))
        for doc in _yaml_documents(path)
    ]
    releases = [yaml.safe_load(path.read_text()) for path in sorted((folder / "helm").glob("*.yaml"))]
    return StackView(listed, manifests, releases)


def load(previews: Iterable[Path], charts: Path | None) -> Platform:
    """Read preview folders (the platform's first, then team stacks') into one model of the cluster."""
    return build([read_folder(folder) for folder in previews], charts)


def build(views: Iterable[StackView], charts: Path | None) -> Platform:
    """One model of the cluster the stacks share (the platform's first, then team stacks')."""
    platform = Platform()
    node_groups: dict[str, Mapping[str, Any]] = {}
    addons: dict[str, Mapping[str, Any]] = {}
    for view in views:
        kube_version = _kubernetes_version(view.resources)
        if not platform.vpc.known and (vpc := addresses.from_resources(view.resources)) is not None:
            platform.vpc = vpc
        for resource in view.resources:
            if resource["type"] == "aws:eks/nodeGroup:NodeGroup":
                node_groups[resource["name"]] = resource["inputs"]
            elif resource["type"] == POD_IDENTITY_ASSOCIATION:
                inputs = resource["inputs"]
                platform.pod_identity.add((inputs.get("namespace", ""), inputs.get("serviceAccount", "")))
            elif resource["type"] == "aws:eks/addon:Addon":
                addons[resource["inputs"]["addonName"]] = resource["inputs"]
        platform.objects += view.manifests
        for release in view.releases:
            if charts is None:
                platform.unrendered[release["name"]] = (
                    "the pinned charts are not fetched and no --charts folder was given"
                )
                continue
            try:
                rendered = helm.render(release, charts, kube_version)
            except helm.HelmUnavailable as exc:
                platform.unrendered[release["name"]] = str(exc)
                continue
            for doc in rendered:
                # Helm puts what names no namespace into the release's.
                doc.setdefault("metadata", {}).setdefault("namespace", release["namespace"])
                platform.objects.append((f"helm/{release['name']}", doc))
    platform.objects += _addon_objects(addons)
    for origin, obj in platform.objects:
        if (workload := from_object(origin, obj)) is not None:
            platform.workloads.append(workload)
        if obj.get("kind") == "ClusterPolicy":
            platform.workloads += operand_workloads(f"operator/{origin}", obj)
    platform.workloads += _addon_workloads(addons)
    # The pods GPU TrainJobs and notebooks get from the runtimes and the notebook form, and a pipeline run's from
    # Argo: they must land, run their images there and find their scheduler too.
    objects = [obj for _, obj in platform.objects]
    for judged in trainer_pods(objects) + notebook_pods(objects) + pipeline_pods(objects):
        meta = judged.pod["metadata"]
        platform.workloads.append(from_pod_template(judged.what, "Pod", meta["namespace"], meta["name"], 1, judged.pod))
    platform.nodes = node_kinds(platform.of_kind("NodePool"), node_groups)
    return platform
