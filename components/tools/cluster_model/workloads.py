"""Workloads: the pods a Kubernetes object makes, reduced to what decides where they can run.

Read from rendered objects only (the stack's own, Kubeflow's, and each Helm release's render), so what is judged is
what the cluster would get.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ...team.quantity import parse_quantity

DEFAULT_SCHEDULER = "default-scheduler"

#: Where each kind keeps its pod template.
_TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
#: Resources a pod asks for that only some nodes have: the device plugins advertise them.
EXTENDED_PREFIXES = ("nvidia.com/", "aws.amazon.com/neuron", "vpc.amazonaws.com/efa")


@dataclass(frozen=True)
class Workload:
    """One pod template and how many pods run from it."""

    origin: str  # where it was read: "helm/<release>", "manifests/<file>", "operator/<release>", "eks-addon/<name>"
    kind: str
    namespace: str
    name: str
    replicas: int | None  # None: one per matching node (DaemonSet)
    scheduler: str
    node_selector: Mapping[str, str]
    affinity: tuple[tuple[Mapping[str, Any], ...], ...]
    tolerations: tuple[Mapping[str, Any], ...]
    images: tuple[str, ...]
    extended: frozenset[str]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: What one pod asks the scheduler for (cpu in cores, memory in bytes, ...): the larger of its containers' sum
    #: and its largest init container, per resource, as the scheduler reckons it.
    requests: Mapping[str, Decimal] = field(default_factory=dict)
    #: Containers (init ones included) that set no memory limit, or request no CPU or no memory.
    unsized: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} ({self.origin})"

    @property
    def is_daemon(self) -> bool:
        return self.kind == "DaemonSet"


def _dig(obj: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    current: Any = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


#: Fields of an InferenceService's predictor that are KServe's own (its scaling, rollout, logging and the model it
#: serves), not the pod's: the rest of the predictor is a pod spec (kserve v0.16.0, PredictorSpec inlines
#: corev1.PodSpec beside ComponentExtensionSpec; the pinned CRD's spec.predictor lists both).
_PREDICTOR_OWN_FIELDS = frozenset(
    {
        "annotations",
        "autoScaling",
        "batcher",
        "canaryTrafficPercent",
        "containerConcurrency",
        "deploymentStrategy",
        "labels",
        "logger",
        "maxReplicas",
        "minReplicas",
        "model",
        "scaleMetric",
        "scaleMetricType",
        "scaleTarget",
        "storageUris",
        "timeout",
        "workerSpec",
        # the framework shorthands, each a model container of its own
        "huggingface",
        "lightgbm",
        "onnx",
        "paddle",
        "pmml",
        "pytorch",
        "sklearn",
        "tensorflow",
        "triton",
        "xgboost",
    }
)
#: The label KServe puts on an InferenceService's pods (its pod webhook selects on it).
INFERENCE_SERVICE_LABEL = "serving.kserve.io/inferenceservice"


def is_inference_service(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "InferenceService" and str(obj.get("apiVersion", "")).startswith("serving.kserve.io/")


def predictor_template(service: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template of the Deployment KServe makes for an InferenceService's predictor in Standard mode: the
    predictor's pod fields, its containers (a `model` is served in a container named kserve-container, with the
    model's resources; its runtime's image is not looked up), its labels and annotations. What KServe's pod webhook
    adds (a storage-initializer init container for a `storageUri`) is not modelled."""
    predictor = (service.get("spec") or {}).get("predictor") or {}
    spec = {k: v for k, v in predictor.items() if k not in _PREDICTOR_OWN_FIELDS}
    model = predictor.get("model")
    if isinstance(model, Mapping):
        container = {
            k: v for k, v in model.items() if k not in ("modelFormat", "runtime", "storageUri", "protocolVersion")
        }
        spec["containers"] = [{**container, "name": "kserve-container"}, *(spec.get("containers") or ())]
    meta = service.get("metadata") or {}
    labels = {**(predictor.get("labels") or {}), INFERENCE_SERVICE_LABEL: str(meta.get("name", ""))}
    annotations = {**(meta.get("annotations") or {}), **(predictor.get("annotations") or {})}
    return {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec}


def pod_template(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod template of a workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, and the
    predictor of a KServe InferenceService), else None."""
    if is_inference_service(obj):
        return predictor_template(obj)
    path = _TEMPLATE_PATHS.get(str(obj.get("kind")))
    template = _dig(obj, path) if path is not None else None
    return template if isinstance(template, Mapping) else None


def _required_terms(pod_spec: Mapping[str, Any]) -> tuple[tuple[Mapping[str, Any], ...], ...]:
    required = _dig(pod_spec, ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")) or {}
    return tuple(tuple(term.get("matchExpressions") or ()) for term in required.get("nodeSelectorTerms") or ())


def _extended(pod_spec: Mapping[str, Any]) -> frozenset[str]:
    names: set[str] = set()
    for container in [*(pod_spec.get("containers") or ()), *(pod_spec.get("initContainers") or ())]:
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            for name, amount in (resources.get(section) or {}).items():
                if name.startswith(EXTENDED_PREFIXES) and str(amount) not in ("0", ""):
                    names.add(name)
    return frozenset(names)


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    # A container with limits and no requests gets its limits as requests (API defaulting).
    asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    found = {}
    for name, amount in asked.items():
        try:
            found[str(name)] = parse_quantity(amount)
        except ValueError:  # a templated or malformed quantity the API would refuse: nothing to count
            continue
    return found


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What a pod asks for: its containers' requests summed, or its largest init container's where that is more
    (init containers run one at a time, before the others)."""
    total: dict[str, Decimal] = {}
    for container in pod_spec.get("containers") or ():
        for name, amount in _container_requests(container).items():
            total[name] = total.get(name, Decimal(0)) + amount
    for container in pod_spec.get("initContainers") or ():
        for name, amount in _container_requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    return total


def unsized_containers(pod_spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The containers that request no CPU or no memory, or have no memory limit: the scheduler cannot count them, and
    one that leaks can take its node's memory from every other pod there."""
    found = []
    for container in [*(pod_spec.get("initContainers") or ()), *(pod_spec.get("containers") or ())]:
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        if not {"cpu", "memory"} <= asked.keys() or "memory" not in (resources.get("limits") or {}):
            found.append(str(container.get("name", "")))
    return tuple(found)


def from_pod_template(
    origin: str, kind: str, namespace: str, name: str, replicas: int | None, template: Mapping[str, Any]
) -> Workload:
    pod_spec = template.get("spec") or {}
    meta = template.get("metadata") or {}
    containers = [*(pod_spec.get("initContainers") or ()), *(pod_spec.get("containers") or ())]
    return Workload(
        origin=origin,
        kind=kind,
        namespace=namespace,
        name=name,
        replicas=replicas,
        scheduler=pod_spec.get("schedulerName") or DEFAULT_SCHEDULER,
        node_selector={str(k): str(v) for k, v in (pod_spec.get("nodeSelector") or {}).items()},
        affinity=_required_terms(pod_spec),
        tolerations=tuple(pod_spec.get("tolerations") or ()),
        images=tuple(str(c["image"]) for c in containers if c.get("image")),
        extended=_extended(pod_spec),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        requests=pod_requests(pod_spec),
        unsized=unsized_containers(pod_spec),
    )


#: Custom resources an operator turns into a StatefulSet, with the pod fields it copies from their spec
#: (prometheus-operator: Documentation/api-reference, PrometheusSpec / AlertmanagerSpec).
OPERATOR_KINDS = ("Prometheus", "Alertmanager")


def _operator_pods(origin: str, obj: Mapping[str, Any], namespace: str) -> Workload:
    spec = obj.get("spec") or {}
    image = spec.get("image") or f"quay.io/prometheus/{str(obj['kind']).lower()}"
    template = {
        "metadata": {"labels": {"app.kubernetes.io/name": str(obj["kind"]).lower()}},
        "spec": {
            "nodeSelector": spec.get("nodeSelector") or {},
            "tolerations": spec.get("tolerations") or [],
            "affinity": spec.get("affinity") or {},
            "containers": [
                {"name": str(obj["kind"]).lower(), "image": image, "resources": spec.get("resources") or {}}
            ],
        },
    }
    name = f"{str(obj['kind']).lower()}-{obj['metadata']['name']}"
    return from_pod_template(
        f"operator/{origin}", "StatefulSet", namespace, name, int(spec.get("replicas", 1)), template
    )


def from_object(origin: str, obj: Mapping[str, Any], default_namespace: str = "default") -> Workload | None:
    """The workload an object runs, or None for an object that runs no pods. `default_namespace` is where an object
    without one lands (a Helm release's namespace)."""
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or default_namespace
    if kind == "Pod":
        return from_pod_template(origin, "Pod", namespace, meta.get("name", ""), 1, obj)
    if kind in OPERATOR_KINDS and str(obj.get("apiVersion", "")).startswith("monitoring.coreos.com/"):
        return _operator_pods(origin, obj, namespace)
    template = pod_template(obj)
    if template is None:
        return None
    replicas: int | None
    if kind == "DaemonSet":
        replicas = None
    elif kind in ("Job", "CronJob"):
        replicas = 1
    elif is_inference_service(obj):
        # KServe makes a Deployment named <name>-predictor, at minReplicas (default 1) until its HPA scales it.
        predictor = (obj.get("spec") or {}).get("predictor") or {}
        return from_pod_template(
            origin,
            "Deployment",
            namespace,
            f"{meta.get('name', '')}-predictor",
            int(predictor.get("minReplicas", 1)),
            template,
        )
    else:
        replicas = int((obj.get("spec") or {}).get("replicas", 1))
    return from_pod_template(origin, str(kind), namespace, meta.get("name", ""), replicas, template)
