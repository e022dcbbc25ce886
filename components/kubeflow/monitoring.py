"""The ServiceMonitors and PodMonitors that let the platform's Prometheus scrape Kubeflow's components, for the
components installed: each monitor is rendered only when the workload it scrapes is among the objects, and a
workload whose metrics port is gone (a later pin renamed it) is an error, never a monitor with no target.

The platform's kube-prometheus-stack selects monitors of every namespace whatever their labels
(`*SelectorNilUsesHelmValues: false`, `components/observability/component.py`), so each monitor lives beside what it
scrapes and goes with it. Ports and paths are upstream's, read in the pinned tree (each target names its file).

Istio's side: Kubeflow's namespaces are sidecar-injected, and `global-deny-all` (an ALLOW policy with no rules in
Istio's root namespace `istio-system`, common/istio/istio-install/base/deny_all_authorizationpolicy.yaml; mesh config
`rootNamespace: istio-system`) refuses every request a sidecar captures unless another policy admits it (istio.io
docs, Authorization Policy reference: a root-namespace policy applies to every workload; an ALLOW policy that matches
nothing allows nothing). Prometheus runs without a sidecar, so it has no mTLS identity a policy could name. The API
server's scrape passes upstream's `ml-pipeline` policy (requests without a `kubeflow-userid` header); Argo's metrics,
TLS of Argo's own that the sidecar cannot read, match no policy. For such a target (`bypass_sidecar`) the metrics
port alone is left out of the sidecar's inbound capture with `traffic.sidecar.istio.io/excludeInboundPorts`, which
the pinned injector turns into the redirect's exclusions (common/istio/istio-install/base/install.yaml, the
sidecar injector template): no Istio policy is widened for the pod's other ports, and the port stays behind the
namespace's NetworkPolicies (its own pods and `allow-platform-monitoring`). istiod and katib's controller run
without a sidecar; the gateway's 15090 is Envoy's own stats listener, outside its authorization filters.

Not monitored: Trainer's and JobSet's controllers serve their metrics over controller-runtime's authenticated HTTPS
(`metrics.secureServing: true`), which needs a token Prometheus does not send; the notebook controller declares no
metrics port; the profile controller turns its metrics off (`--metrics-bind-address=0`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .objects import MONITORING_API, Manifest, containers, pod_template
from .transform import clone

_TREE = "community-distribution/"


@dataclass(frozen=True)
class Target:
    """What one monitor scrapes: the pods (PodMonitor) or the Service (ServiceMonitor) with these labels in
    `namespace`, on the named port and path. `source`: the pinned file that states the port and path."""

    name: str
    namespace: str
    kind: Literal["ServiceMonitor", "PodMonitor"]
    #: The pods' labels the workload's template sets (and, for a ServiceMonitor, the Service's labels).
    pods: Mapping[str, str]
    port: str
    path: str
    source: str
    service: Mapping[str, str] = field(default_factory=dict)
    #: A self-signed certificate, no client authentication.
    tls: bool = False
    #: The port is left out of the Istio sidecar's inbound capture: no authorization policy admits the scrape.
    bypass_sidecar: bool = False


TARGETS: tuple[Target, ...] = (
    # istiod's pod annotations `prometheus.io/port: '15014'`, `prometheus.io/path: /metrics`; its Service names the
    # port `http-monitoring`.
    Target(
        "istiod",
        "istio-system",
        "ServiceMonitor",
        pods={"app": "istiod", "istio": "pilot"},
        service={"app": "istiod", "istio": "pilot"},
        port="http-monitoring",
        path="/metrics",
        source=f"{_TREE}common/istio/istio-install/base/install.yaml",
    ),
    # The gateway's Envoy: container port `http-envoy-prom` (15090), Envoy's Prometheus path `/stats/prometheus`
    # (the `prometheus.io/path` the gateway's template carries). The gateway has no Service port for it.
    Target(
        "istio-ingressgateway",
        "istio-system",
        "PodMonitor",
        pods={"app": "istio-ingressgateway", "istio": "ingressgateway"},
        port="http-envoy-prom",
        path="/stats/prometheus",
        source=f"{_TREE}common/istio/istio-install/base/install.yaml",
    ),
    # The Pipelines API server: its Service's `prometheus.io/port: "8888"`, `prometheus.io/scheme: http`; the pod
    # names that port `http`. A PodMonitor: the visualization server's Service carries the same labels and port name.
    Target(
        "ml-pipeline",
        "kubeflow",
        "PodMonitor",
        pods={"app": "ml-pipeline"},
        port="http",
        path="/metrics",
        source=f"{_TREE}applications/pipeline/upstream/base/pipeline/ml-pipeline-apiserver-service.yaml",
    ),
    # Argo's workflow controller: container port `metrics` (9090); Argo serves it over TLS with a self-signed
    # certificate unless `metricsConfig.secure` is false (its default is true: Argo's workflow-controller-configmap
    # reference), and Kubeflow's configmap sets no `metricsConfig`.
    Target(
        "workflow-controller",
        "kubeflow",
        "PodMonitor",
        pods={"app": "workflow-controller"},
        port="metrics",
        path="/metrics",
        source="remote/argoproj/argo-workflows@v3.7.3/manifests/base/workflow-controller/"
        "workflow-controller-deployment.yaml",
        tls=True,
        bypass_sidecar=True,
    ),
    # Katib's controller: its Service's port `metrics` (8080), `prometheus.io/scheme: http`.
    Target(
        "katib-controller",
        "kubeflow",
        "ServiceMonitor",
        pods={"katib.kubeflow.org/component": "controller"},
        service={"katib.kubeflow.org/component": "controller"},
        port="metrics",
        path="/metrics",
        source=f"{_TREE}applications/katib/upstream/components/controller/service.yaml",
    ),
)


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _port_names(obj: Manifest) -> set[str]:
    template = pod_template(obj) or {}
    return {p["name"] for c in containers(template.get("spec", {})) for p in c.get("ports") or () if p.get("name")}


def render(target: Target) -> Manifest:
    endpoint: dict[str, Any] = {"port": target.port, "path": target.path, "interval": "30s"}
    if target.tls:
        endpoint.update(scheme="https", tlsConfig={"insecureSkipVerify": True})
    if target.kind == "ServiceMonitor":
        spec: dict[str, Any] = {"selector": {"matchLabels": dict(target.service)}, "endpoints": [endpoint]}
    else:
        spec = {"selector": {"matchLabels": dict(target.pods)}, "podMetricsEndpoints": [endpoint]}
    return {
        "apiVersion": MONITORING_API,
        "kind": target.kind,
        "metadata": {"name": target.name, "namespace": target.namespace},
        "spec": spec,
    }


def monitors(objects: Iterable[Manifest], targets: Iterable[Target] = TARGETS) -> list[Manifest]:
    """A monitor for each target whose workload is among `objects`. Raises ValueError when such a workload no longer
    names the port, or a ServiceMonitor's Service is missing or lacks the port (the monitor would find nothing)."""
    objects = list(objects)
    found, problems = [], []
    for target in targets:
        workloads = [
            o
            for o in objects
            if o["metadata"].get("namespace") == target.namespace
            and (template := pod_template(o)) is not None
            and o["kind"] != "Job"
            and _selects(target.pods, (template.get("metadata") or {}).get("labels") or {})
        ]
        if not workloads:
            continue  # not installed
        for workload in workloads:
            if target.port not in _port_names(workload):
                problems.append(f"{target.namespace}/{workload['metadata']['name']}: no port {target.port!r}")
        if target.kind == "ServiceMonitor":
            services = [
                o
                for o in objects
                if o["kind"] == "Service"
                and o["metadata"].get("namespace") == target.namespace
                and _selects(target.service, o["metadata"].get("labels") or {})
                and any(p.get("name") == target.port for p in o["spec"].get("ports") or ())
            ]
            if not services:
                problems.append(
                    f"{target.namespace}: no Service labelled {dict(target.service)} with a port {target.port!r}"
                )
        found.append(render(target))
    if problems:
        raise ValueError(
            "Kubeflow's metrics are not where the monitors look (check the pinned files of monitoring.TARGETS):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return found


#: The Istio pod annotation listing inbound ports its sidecar does not capture.
EXCLUDE_INBOUND = "traffic.sidecar.istio.io/excludeInboundPorts"


def _selected(target: Target, obj: Manifest) -> bool:
    template = pod_template(obj)
    return (
        template is not None
        and obj["kind"] != "Job"
        and obj["metadata"].get("namespace") == target.namespace
        and _selects(target.pods, (template.get("metadata") or {}).get("labels") or {})
    )


def _excluded(template: dict[str, Any], port_name: str) -> None:
    numbers = {
        p["containerPort"]
        for c in containers(template.get("spec", {}))
        for p in c.get("ports") or ()
        if p.get("name") == port_name
    }
    annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
    listed = [p.strip() for p in str(annotations.get(EXCLUDE_INBOUND, "")).split(",") if p.strip()]
    listed += [str(n) for n in sorted(numbers) if str(n) not in listed]
    annotations[EXCLUDE_INBOUND] = ",".join(listed)


def bypass_sidecars(objects: Iterable[Manifest], targets: Iterable[Target] = TARGETS) -> list[Manifest]:
    """The objects with the metrics port of every `bypass_sidecar` target's pods left out of the sidecar's capture."""
    bypassed = [t for t in targets if t.bypass_sidecar]
    result = []
    for obj in objects:
        chosen = [t for t in bypassed if _selected(t, obj)]
        if chosen:
            obj = clone(obj)
            for target in chosen:
                _excluded(pod_template(obj) or {}, target.port)
        result.append(obj)
    return result
