"""The pods a pipeline run gets, which Argo creates at run time and no rendered object shows: each step's driver pod
and its executor pod, as the Pipelines API server compiles the run and Argo places it (the facts and their sources
are in `components.kubeflow.pipeline_runs`). Judged like notebooks' and TrainJobs' pods: where they land and whether
their images run there.

The step's own image is the user's and unknown here; the executor pod carries the launcher, which runs inside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from ...kubeflow.pipeline_runs import (
    EXECUTOR_IMAGE_ARG,
    NAMESPACE,
    WORKFLOW_CONTROLLER,
    is_api_server,
    run_images,
    spec_patch,
)
from .admission import JudgedPod
from .admission import _team_namespace as team_namespace
from .workloads import pod_template

#: The ConfigMap whose `workflowDefaults` Argo merges under every workflow's own fields (argo-workflows v3.7.3
#: docs/default-workflow-specs.md).
ARGO_CONFIG = "workflow-controller-configmap"


def _executor_image(objects: list[Mapping[str, Any]]) -> str | None:
    for obj in objects:
        if obj.get("kind") == "Deployment" and obj["metadata"]["name"] == WORKFLOW_CONTROLLER:
            for container in (pod_template(obj) or {}).get("spec", {}).get("containers") or ():
                args = list(container.get("args") or ())
                if EXECUTOR_IMAGE_ARG in args[:-1]:
                    return str(args[args.index(EXECUTOR_IMAGE_ARG) + 1])
    return None


def _workflow_defaults(objects: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    for obj in objects:
        if obj.get("kind") == "ConfigMap" and obj["metadata"]["name"] == ARGO_CONFIG:
            defaults = yaml.safe_load((obj.get("data") or {}).get("workflowDefaults") or "{}") or {}
            return defaults.get("spec") or {}
    return {}


def _placement(defaults: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """What Argo gives every pod of the compiled workflow: the patched spec's node selector (keys of the defaults
    under the workflow's), affinity and tolerations (the workflow's, else the defaults')."""
    spec: dict[str, Any] = {}
    selector = {**(defaults.get("nodeSelector") or {}), **(patch.get("nodeSelector") or {})}
    if selector:
        spec["nodeSelector"] = selector
    for field in ("affinity", "tolerations"):
        value = patch.get(field) or defaults.get(field)
        if value:
            spec[field] = value
    return spec


def pipeline_pods(objects: Iterable[Mapping[str, Any]]) -> list[JudgedPod]:
    """A step's driver pod and executor pod, in a team namespace, for the Pipelines the objects install."""
    objects = list(objects)
    server = next((o for o in objects if is_api_server(o) and o["metadata"].get("namespace") == NAMESPACE), None)
    if server is None:
        return []
    driver, launcher = run_images(server)
    executor = _executor_image(objects)
    sidecars = [{"name": "wait", "image": executor}] if executor else []
    placement = _placement(_workflow_defaults(objects), spec_patch(server))
    namespace, labels = team_namespace(objects)
    pods = {
        "driver": {"containers": [{"name": "main", "image": driver}, *sidecars]},
        "executor": {"initContainers": [{"name": "kfp-launcher", "image": launcher}], "containers": sidecars},
    }
    found = []
    for role, spec in pods.items():
        pod = {
            "metadata": {"name": f"pipeline-step-{role}", "namespace": namespace},
            "spec": {**spec, **placement},
        }
        found.append(JudgedPod(f"a pipeline step's {role} pod", pod, labels))
    return found
