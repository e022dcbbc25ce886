"""Where the pods of a pipeline run go (pure): Argo creates them at run time, so no rendered object shows them; what
decides their placement is the workflow the Pipelines API server compiles for each run.

Facts, read in kubeflow/pipelines at 2.16.1 (`versions.KUBEFLOW_PIPELINES`, commit 67a73cf8):

- every step runs two pods: a driver (image `V2_DRIVER_IMAGE` of the API server's environment; template
  `system-container-driver`, backend/src/v2/compiler/argocompiler/container.go) and the executor, whose init container
  `kfp-launcher` (image `V2_LAUNCHER_IMAGE`) copies the launcher binary (`--copy /kfp-launcher/launch`) into an
  emptyDir that the step's own container then runs as its command (backend/src/v2/driver/driver.go,
  `component.KFPLauncherPath`). The launcher binary therefore runs inside the user's image: a step can only run
  where the launcher's architecture can, whatever its own image is built for;
- the server applies `COMPILED_PIPELINE_SPEC_PATCH` (a JSON object, upstream `{}`) to every workflow it compiles, as
  a Kubernetes strategic merge patch of the Workflow's `spec` (argocompiler/argo.go `Compile`,
  argocompiler/spec_patch.go `ApplyWorkflowSpecPatch`; runs and recurring runs alike, apiserver/template/
  v2_template.go);
- Argo gives every pod of a workflow the workflow's `spec.nodeSelector` unless the template sets its own
  (argo-workflows v3.7.3 workflow/controller/workflowpod.go `addSchedulingConstraints`); KFP's templates set none,
  and a step's own node selector (kfp-kubernetes `add_node_selector`) arrives in the executor's podSpecPatch, a
  strategic merge in which a map adds keys: `kubernetes.io/arch` stays unless the step names that key itself.

KFP 2.16.1's driver and launcher are published for amd64 only (kubeflow/pipelines#13957, #12705; first arm64 images
in 2.17.0), and the platform's CPU pool launches Graviton too: a step landing there fails with `exec format error`.
So the patch pins the architecture every run pod's images share, derived from the images the server names; a later
pin whose images are multi-arch (`components/image_architectures.json`) drops the pin by itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..images import POOL_ARCHITECTURES, common_architectures
from .objects import Manifest, containers, pod_template
from .transform import ARCHITECTURE, clone

NAMESPACE = "kubeflow"
API_SERVER = "ml-pipeline"
DRIVER_ENV = "V2_DRIVER_IMAGE"
LAUNCHER_ENV = "V2_LAUNCHER_IMAGE"
PATCH_ENV = "COMPILED_PIPELINE_SPEC_PATCH"
#: Argo's workflow controller, whose `--executor-image` argument names the image of every pod's `init` and `wait`
#: containers (argo-workflows v3.7.3, manifests/base/workflow-controller; Kubeflow's patch sets it).
WORKFLOW_CONTROLLER = "workflow-controller"
EXECUTOR_IMAGE_ARG = "--executor-image"


def is_api_server(obj: Mapping[str, Any]) -> bool:
    return (
        obj["kind"] == "Deployment"
        and obj["metadata"].get("namespace") == NAMESPACE
        and obj["metadata"]["name"] == API_SERVER
    )


def _server_container(obj: Mapping[str, Any]) -> dict[str, Any]:
    template = pod_template(obj) or {}
    found = [
        c for c in containers(template.get("spec", {})) if any(e["name"] == DRIVER_ENV for e in c.get("env") or ())
    ]
    if len(found) != 1:
        raise ValueError(f"Pipelines: {len(found)} containers of Deployment {NAMESPACE}/{API_SERVER} set {DRIVER_ENV}")
    return found[0]


def _env(container: Mapping[str, Any], name: str) -> str | None:
    for entry in container.get("env") or ():
        if entry["name"] == name:
            if "value" not in entry:
                raise ValueError(f"Pipelines: {name} of {NAMESPACE}/{API_SERVER} is not a plain value")
            return str(entry["value"])
    return None


def run_images(server: Mapping[str, Any]) -> tuple[str, str]:
    """The driver's and the launcher's images, as the API server names them."""
    container = _server_container(server)
    images = (_env(container, DRIVER_ENV), _env(container, LAUNCHER_ENV))
    if None in images:
        raise ValueError(f"Pipelines: {NAMESPACE}/{API_SERVER} sets no {DRIVER_ENV} or no {LAUNCHER_ENV}")
    return images[0] or "", images[1] or ""


def spec_patch(server: Mapping[str, Any]) -> dict[str, Any]:
    """The patch the API server applies to every compiled workflow's spec (`{}` when it sets none)."""
    text = _env(_server_container(server), PATCH_ENV) or "{}"
    patch = json.loads(text)
    if not isinstance(patch, dict):
        raise ValueError(f"Pipelines: {PATCH_ENV} of {NAMESPACE}/{API_SERVER} is not a JSON object: {text!r}")
    return patch


def _pinned(server: Manifest) -> Manifest:
    supported = common_architectures(list(run_images(server)))
    if supported >= POOL_ARCHITECTURES:
        return server
    if len(supported) != 1:
        raise ValueError(f"Pipelines: the driver and launcher images share no architecture: {run_images(server)}")
    server = clone(server)
    container = _server_container(server)
    patch = spec_patch(server)
    patch.setdefault("nodeSelector", {})[ARCHITECTURE] = next(iter(supported))
    env = [e for e in container.get("env") or () if e["name"] != PATCH_ENV]
    container["env"] = [*env, {"name": PATCH_ENV, "value": json.dumps(patch, sort_keys=True)}]
    return server


def pin_run_pods(objects: Iterable[Manifest]) -> list[Manifest]:
    """The objects with the API server's workflow patch selecting the architecture of the driver and launcher
    images, when they are not built for every architecture the platform's pools launch."""
    return [_pinned(obj) if is_api_server(obj) else obj for obj in objects]
