"""The engine tier's only changes to what the stack deploys, each listed with why. Nothing else is changed.

1. **Charts from the pinned copies.** Every Helm release installs its chart from `../shared/reference/charts/
   <chart>-<version>/` (the chart as its publisher ships it at our pin) instead of the chart repository, which the
   box cannot reach.
2. **Admission webhooks and aggregated APIs whose servers cannot run.** kwok runs no containers: a webhook's server
   never answers, and a webhook with `failurePolicy: Fail` would refuse every object it intercepts. Each webhook
   configuration below keeps its object and its webhooks (so the stack's graph, its ordering, its CA-injection
   gates and teardown stay as deployed) with `failurePolicy: Ignore`: the API server's call fails at once inside
   the box's namespace (no route) and the object is admitted as if the webhook had allowed it. Each APIService is
   left out of its chart: an unavailable one breaks API discovery for every client (Helm and the provider
   included). An unlisted one fails the run, so a new webhook is seen and judged, not silently passed.

CRD conversion webhooks are left as they are: each CRD that names one serves a single version, so the API server
never converts and never calls it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi

from components.tools.charts import folder_names
from components.versions import charts as charts_pinned

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
_WEBHOOK_TYPES = {
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
    "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration",
}
_NO_SERVER = "its server is a pod, and kwok's pods run no containers"

#: Webhook configurations the stack creates itself (Kubeflow's), by name: why each is set to Ignore.
STACK_WEBHOOKS: Mapping[str, str] = {
    "cache-webhook-kubeflow": f"KFP's cache server mutates pipeline pods; {_NO_SERVER}",
    "defaulter.trainer.kubeflow.org": f"Kubeflow Trainer defaults TrainJobs; {_NO_SERVER}",
    "validator.trainer.kubeflow.org": f"Kubeflow Trainer validates TrainJobs and runtimes; {_NO_SERVER}",
    "jobset-mutating-webhook-configuration": f"JobSet defaults JobSets and their pods; {_NO_SERVER}",
    "jobset-validating-webhook-configuration": f"JobSet validates JobSets and their pods; {_NO_SERVER}",
    "poddefaults-webhook-mutating-webhook-configuration": f"Kubeflow's PodDefaults mutate pods; {_NO_SERVER}",
    "pvcviewer-mutating-webhook-configuration": f"Kubeflow's PVC viewer defaults PVCViewers; {_NO_SERVER}",
    "pvcviewer-validating-webhook-configuration": f"Kubeflow's PVC viewer validates PVCViewers; {_NO_SERVER}",
    "istio-sidecar-injector": f"istiod injects sidecars into pods; {_NO_SERVER}",
    "istio-validator-istio-system": f"istiod validates Istio's config objects; {_NO_SERVER}",
}

#: What each chart's post-render step changes: (kind, name) -> why. Webhook configurations are set to Ignore,
#: APIServices left out.
CHART_OBJECTS: Mapping[str, Mapping[tuple[str, str], str]] = {
    "cert-manager": {
        ("ValidatingWebhookConfiguration", "cert-manager-webhook"): f"validates cert-manager's objects; {_NO_SERVER}",
        ("MutatingWebhookConfiguration", "cert-manager-webhook"): f"defaults cert-manager's objects; {_NO_SERVER}",
    },
    "aws-load-balancer-controller": {
        ("MutatingWebhookConfiguration", "aws-load-balancer-webhook"): f"mutates pods and Services; {_NO_SERVER}",
        ("ValidatingWebhookConfiguration", "aws-load-balancer-webhook"): f"validates Ingresses; {_NO_SERVER}",
    },
    "kube-prometheus-stack": {
        ("MutatingWebhookConfiguration", "kube-prometheus-stack-admission"): f"defaults PrometheusRules; {_NO_SERVER}",
        (
            "ValidatingWebhookConfiguration",
            "kube-prometheus-stack-admission",
        ): f"validates PrometheusRules; {_NO_SERVER}",
    },
    "kueue": {
        ("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration"): f"defaults workloads; {_NO_SERVER}",
        ("ValidatingWebhookConfiguration", "kueue-validating-webhook-configuration"): f"validates queues; {_NO_SERVER}",
        (
            "APIService",
            "v1beta1.visibility.kueue.x-k8s.io",
        ): f"Kueue's visibility API (pending workloads); {_NO_SERVER}",
        (
            "APIService",
            "v1beta2.visibility.kueue.x-k8s.io",
        ): f"Kueue's visibility API (pending workloads); {_NO_SERVER}",
    },
    # KServe v0.16.0 charts/kserve-resources/templates/webhookconfiguration.yaml (some behind values the stack sets
    # off: LLMInferenceService, local model caches).
    "kserve": {
        (
            "MutatingWebhookConfiguration",
            "inferenceservice.serving.kserve.io",
        ): f"defaults InferenceServices; {_NO_SERVER}",
        **{
            ("ValidatingWebhookConfiguration", f"{kind}.serving.kserve.io"): f"validates {kind} objects; {_NO_SERVER}"
            for kind in (
                "inferenceservice",
                "trainedmodel",
                "inferencegraph",
                "clusterservingruntime",
                "servingruntime",
                "localmodelcache",
                "llminferenceservice",
                "llminferenceserviceconfig",
            )
        },
    },
    "prometheus-adapter": {
        ("APIService", "v1beta1.custom.metrics.k8s.io"): f"the custom metrics API the HPAs read; {_NO_SERVER}",
    },
}


class UnlistedWebhook(Exception):
    """A webhook configuration or APIService the stack creates that this module does not list."""


def chart_folder(charts: Path, chart: str, version: str) -> Path:
    """The pinned copy of a chart: `chart` as the release names it (a name, or an OCI reference), found under the
    names the charts fetch gives it (KServe's controller chart `kserve` lives in its source folder
    `kserve-resources`)."""
    name = chart.rsplit("/", 1)[-1]
    source = next((pin.folder for pin in charts_pinned() if pin.name == name and pin.version == version), None)
    folder = next(
        (charts / n for n in folder_names(name, version, source) if (charts / n / "Chart.yaml").is_file()), None
    )
    if folder is None:
        raise FileNotFoundError(f"no pinned copy of chart {chart} {version} in {charts}")
    return folder


def postrender_script(folder: Path, release_name: str) -> Path:
    """The executable Helm runs on a release's rendered objects (Helm 3 passes it no arguments, so one per
    release): `python -m engine.postrender <release>` with this interpreter and this repository."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"postrender-{release_name}"
    repo = Path(__file__).resolve().parent.parent
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{repo}" exec "{sys.executable}" -m engine.postrender "{release_name}"\n')
    script.chmod(0o755)
    return script


def _release(props: dict[str, Any], charts: Path, postrender: Path) -> dict[str, Any]:
    chart, version = str(props["chart"]), str(props["version"])
    changed = {k: v for k, v in props.items() if k not in ("repositoryOpts", "chart", "version")}
    changed["chart"] = str(chart_folder(charts, chart, version))
    changed["postrender"] = str(postrender_script(postrender, str(props["name"])))
    return changed


def ignoring(configuration: dict[str, Any]) -> dict[str, Any]:
    """A webhook configuration whose every webhook lets objects through when it cannot be called."""
    webhooks = [{**w, "failurePolicy": "Ignore"} for w in configuration.get("webhooks") or ()]
    return {**configuration, "webhooks": webhooks}


def _webhook(props: dict[str, Any]) -> dict[str, Any]:
    name = (props.get("metadata") or {}).get("name")
    if name not in STACK_WEBHOOKS:
        raise UnlistedWebhook(f"webhook configuration {name!r} is not listed in engine/transforms.py STACK_WEBHOOKS")
    return ignoring(props)


def register(charts: Path, postrender: Path) -> None:
    """Register the transforms for every resource the program creates from here on; the post-render scripts
    go to the folder `postrender`."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ == HELM_RELEASE:
            return pulumi.ResourceTransformResult(_release(dict(args.props), charts, postrender), args.opts)
        if args.type_ in _WEBHOOK_TYPES:
            return pulumi.ResourceTransformResult(_webhook(dict(args.props)), args.opts)
        return None

    pulumi.runtime.register_resource_transform(transform)


def post_render(documents: list[dict[str, Any]], release_name: str) -> list[dict[str, Any]]:
    """A chart's rendered objects with its listed webhooks set to Ignore and its APIServices left out."""
    listed = CHART_OBJECTS.get(release_name, {})
    kept = []
    for document in documents:
        kind, name = document.get("kind"), (document.get("metadata") or {}).get("name")
        if kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService"):
            if (kind, name) not in listed:
                raise UnlistedWebhook(f"{kind} {name!r} of chart {release_name} is not listed in CHART_OBJECTS")
            if kind == "APIService":
                continue
            document = ignoring(document)
        kept.append(document)
    return kept


def listing() -> str:
    """Every change, as JSON, for the docs and the run's record."""
    return json.dumps(
        {
            "stack": STACK_WEBHOOKS,
            "charts": {c: {f"{k} {n}": why for (k, n), why in o.items()} for c, o in CHART_OBJECTS.items()},
        },
        indent=2,
        sort_keys=True,
    )
