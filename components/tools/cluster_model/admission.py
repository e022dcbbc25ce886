"""The platform's own admission policies applied to the pods its documented workflows create, as the API server
applies a ValidatingAdmissionPolicy: its binding's namespace selector, match conditions, variables, then every
validation (kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import celpy
import yaml

from ...team.quantity import parse_quantity
from .kube import expression_matches
from .workloads import DEFAULT_SCHEDULER, pod_template

GPU = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
#: What the profile controller labels a team namespace with.
PROFILE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile"}


@dataclass(frozen=True)
class JudgedPod:
    """A pod a documented workflow creates, where it is created, and from what."""

    what: str
    pod: Mapping[str, Any]
    namespace_labels: Mapping[str, str]


@functools.cache
def _environment() -> Any:
    return celpy.Environment()  # builds its parser: a quarter of a second, paid once and only when a policy is judged


@functools.cache
def _program(expression: str) -> Any:
    # Parsing is most of the cost (a LALR parse in pure Python), and a policy's few expressions are evaluated for
    # every judged pod.
    return _environment().program(_environment().compile(expression))


def _run(expression: str, activation: Mapping[str, Any]) -> Any:
    return _program(expression).evaluate(dict(activation))


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if not selector:
        return True
    domains = {k: frozenset({v}) for k, v in labels.items()}
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()) and all(
        expression_matches(e, domains) for e in selector.get("matchExpressions") or ()
    )


def takes_in(policy: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Whether the policy's `matchConstraints.resourceRules` take in creating `obj`: the API server asks only the
    policies whose rules match the request (ValidatingAdmissionPolicy, "Matching requests"), so a policy on
    TrainJobs is not asked about a pod. An object without `kind` is a pod (the model's judged pods); its resource is
    the kind's lower-case plural, as for every kind the platform's policies name."""
    api_version = str(obj.get("apiVersion", "v1"))
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    resource = f"{str(obj.get('kind', 'Pod')).lower()}s"
    for rule in (policy["spec"].get("matchConstraints") or {}).get("resourceRules") or ():
        groups, resources = rule.get("apiGroups") or (), rule.get("resources") or ()
        operations = rule.get("operations") or ()
        if (
            (group in groups or "*" in groups)
            and (resource in resources or "*" in resources)
            and ("CREATE" in operations or "*" in operations)
        ):
            return True
    return False


def defaulted(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as admission sees it: the API server applies the v1 Pod defaults when it decodes a request, before
    any admission plugin runs (kubernetes v1.35.4 `pkg/apis/core/v1/defaults.go`: `SetDefaults_PodSpec` sets
    `schedulerName: default-scheduler`; `SetDefaults_Pod` copies each container's limits into the requests it does
    not set). A quantity reaches CEL as its string (`resource.Quantity` serialises as a string)."""
    found: dict[str, Any] = copy.deepcopy(dict(pod))
    spec = found.setdefault("spec", {})
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        resources = container.get("resources") or {}
        for field in ("limits", "requests"):
            if resources.get(field):
                resources[field] = {k: str(v) for k, v in resources[field].items()}
        if resources.get("limits"):
            resources["requests"] = {**resources["limits"], **(resources.get("requests") or {})}
    return found


def invalid(pod: Mapping[str, Any]) -> list[str]:
    """What the API server's own validation refuses in the pod's resources before any validating admission policy
    is asked: an extended resource (a name with a domain outside `kubernetes.io`, as `nvidia.com/gpu`) cannot be
    overcommitted, so it must be limited, and requested as limited (kubernetes v1.35.4
    `pkg/apis/core/validation/validation.go` `ValidateResourceRequirements`; the messages are its own)."""
    spec = defaulted(pod)["spec"]
    found = []
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or ()):
            resources, path = container.get("resources") or {}, f"spec.{field}[{index}].resources"
            limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
            for name, value in requests.items():
                if "/" not in name or name.split("/")[0].endswith("kubernetes.io"):
                    continue
                if name not in limits:
                    found.append(f"{path}.limits: Forbidden: Limit must be set for non overcommitable resources")
                elif parse_quantity(value) != parse_quantity(limits[name]):  # as quantities: "1" is "1000m"
                    found.append(
                        f'{path}.requests: Invalid value: "{value}": must be equal to {name} limit of {limits[name]}'
                    )
    return found


def refusals(policy: Mapping[str, Any], binding: Mapping[str, Any], judged: JudgedPod) -> list[str]:
    """Why the policy, as bound, denies creating the pod (empty: admitted): the message of every validation that
    fails (the API server reports the first under Deny, every one under Warn)."""
    if "Deny" not in (binding["spec"].get("validationActions") or ()) or not takes_in(policy, judged.pod):
        return []
    namespace_name = (judged.pod.get("metadata") or {}).get("namespace", "default")
    labels = {"kubernetes.io/metadata.name": namespace_name, **judged.namespace_labels}
    spec = policy["spec"]
    for selector in (
        (binding["spec"].get("matchResources") or {}).get("namespaceSelector"),
        (spec.get("matchConstraints") or {}).get("namespaceSelector"),
    ):
        if not _selects(selector, labels):
            return []
    namespace = {"metadata": {"name": labels["kubernetes.io/metadata.name"], "labels": labels}}
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(
            defaulted(judged.pod) if judged.pod.get("kind", "Pod") == "Pod" else dict(judged.pod)
        ),
        "namespaceObject": celpy.json_to_cel(namespace),
    }
    if not all(_run(c["expression"], activation) for c in spec.get("matchConditions") or ()):
        return []
    variables: dict[Any, Any] = {}
    for variable in spec.get("variables") or ():
        variables[celpy.celtypes.StringType(variable["name"])] = _run(
            variable["expression"], {**activation, "variables": celpy.celtypes.MapType(variables)}
        )
    activation["variables"] = celpy.celtypes.MapType(variables)
    return [
        str(_run(rule["messageExpression"], activation)) if "messageExpression" in rule else rule.get("message", "")
        for rule in spec.get("validations") or ()
        if not _run(rule["expression"], activation)
    ]


def bound_policies(objects: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    objects = list(objects)
    policies = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ValidatingAdmissionPolicy"}
    return [
        (policies[b["spec"]["policyName"]], b)
        for b in objects
        if b.get("kind") == "ValidatingAdmissionPolicyBinding" and b["spec"].get("policyName") in policies
    ]


def _team_namespace(objects: list[Mapping[str, Any]]) -> tuple[str, dict[str, str]]:
    """A Kubeflow team namespace of the platform (its labels as the cluster will have them), else a stand-in."""
    for obj in objects:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if obj.get("kind") == "Namespace" and all(labels.get(k) == v for k, v in PROFILE_LABELS.items()):
            return obj["metadata"]["name"], dict(labels)
    return "team", dict(PROFILE_LABELS)


def trainer_pods(objects: Iterable[Mapping[str, Any]]) -> list[JudgedPod]:
    """The trainer pod a GPU TrainJob gets from each training runtime: the runtime's `node` pod template, with the GPU
    resources the TrainJob adds (it adds no toleration), in a team namespace."""
    objects = list(objects)
    namespace, labels = _team_namespace(objects)
    found = []
    for runtime in objects:
        if runtime.get("kind") not in ("ClusterTrainingRuntime", "TrainingRuntime"):
            continue
        for job in runtime["spec"]["template"]["spec"].get("replicatedJobs") or ():
            if job["name"] != "node":
                continue
            template = copy.deepcopy(job["template"]["spec"]["template"])
            template["spec"]["containers"][0]["resources"] = GPU
            _claim_volumes(template["spec"], runtime, runtime["metadata"]["name"])
            name = runtime["metadata"]["name"]
            pod = {
                "metadata": {**template.get("metadata", {}), "name": f"{name}-node-0-0", "namespace": namespace},
                "spec": template["spec"],
            }
            found.append(JudgedPod(f"a GPU TrainJob's trainer pod from runtime {name}", pod, labels))
    return found


def _claim_volumes(spec: dict[str, Any], runtime: Mapping[str, Any], jobset: str) -> None:
    """The volumes JobSet adds for the runtime's `volumeClaimPolicies`: one claim per template, a volume of the
    template's name in every pod that mounts it (kubernetes-sigs/jobset v0.11 `VolumeClaimPolicies`, the claim
    named `<template>-<jobset>`). Without it the pod names a volume it does not have, which the API server refuses."""
    mounted = {m["name"] for c in spec.get("containers") or () for m in c.get("volumeMounts") or ()}
    volumes = spec.setdefault("volumes", [])
    for policy in runtime["spec"]["template"]["spec"].get("volumeClaimPolicies") or ():
        for claim in policy.get("templates") or ():
            name = claim["metadata"]["name"]
            if name in mounted and all(v["name"] != name for v in volumes):
                volumes.append({"name": name, "persistentVolumeClaim": {"claimName": f"{name}-{jobset}"}})
    if not volumes:
        del spec["volumes"]


SPAWNER_CONFIG = "spawner_ui_config.yaml"


def with_pod_defaults(pod: dict[str, Any], objects: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The pod with the labels and annotations of every PodDefault of its namespace whose selector selects it, as
    Kubeflow's PodDefault webhook adds them when the pod is created (only those two fields: the rules read no
    other)."""
    metadata = pod["metadata"]
    for default in objects:
        if default.get("kind") != "PodDefault" or default["metadata"].get("namespace") != metadata["namespace"]:
            continue
        spec = default.get("spec") or {}
        if spec.get("selector") and _selects(spec["selector"], metadata.get("labels") or {}):
            metadata.setdefault("labels", {}).update(spec.get("labels") or {})
            metadata.setdefault("annotations", {}).update(spec.get("annotations") or {})
    return pod


def notebook_pods(objects: Iterable[Mapping[str, Any]]) -> list[JudgedPod]:
    """A GPU notebook's pod for each pool the notebook form offers, as the notebook controller makes it from the
    form's choices: the CUDA image, one GPU (requests defaulted from limits), the GPU toleration group and the pool's
    affinity, owned and labelled by the notebook's StatefulSet, in a team namespace, with what the namespace's
    PodDefaults add to every notebook."""
    objects = list(objects)
    namespace, labels = _team_namespace(objects)
    found = []
    for config_map in objects:
        text = (config_map.get("data") or {}).get(SPAWNER_CONFIG) if config_map.get("kind") == "ConfigMap" else None
        if not text:
            continue
        form = yaml.safe_load(text)["spawnerFormDefaults"]
        images = form["image"]["options"]
        image = next((i for i in images if "cuda" in i), form["image"]["value"])
        tolerations = [
            t for group in form.get("tolerationGroup", {}).get("options") or () for t in group["tolerations"]
        ]
        for option in form.get("affinityConfig", {}).get("options") or ():
            name = f"nb-{option['configKey']}"[:50]
            pod = {
                "metadata": {
                    "name": f"{name}-0",
                    "namespace": namespace,
                    "labels": {"notebook-name": name, "statefulset": name},
                    "ownerReferences": [
                        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "controller": True, "uid": "u"}
                    ],
                },
                "spec": {
                    "containers": [{"name": name, "image": image, "resources": GPU}],
                    "tolerations": tolerations,
                    "affinity": option["affinity"],
                },
            }
            found.append(
                JudgedPod(f"a GPU notebook on {option['displayName']}", with_pod_defaults(pod, objects), labels)
            )
    return found


def documented_pods(
    objects: Iterable[Mapping[str, Any]], namespace_labels: Mapping[str, Mapping[str, str]]
) -> list[JudgedPod]:
    """The pods of documented example workloads, in the namespace they are applied to."""
    found = []
    for obj in objects:
        template = pod_template(obj)
        if template is None:
            continue
        namespace = obj["metadata"].get("namespace") or "default"
        pod = {
            "metadata": {**(template.get("metadata") or {}), "name": obj["metadata"]["name"], "namespace": namespace},
            "spec": template["spec"],
        }
        found.append(
            JudgedPod(f"{obj['kind']} {namespace}/{obj['metadata']['name']}", pod, namespace_labels.get(namespace, {}))
        )
    return found
