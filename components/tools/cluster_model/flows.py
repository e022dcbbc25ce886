"""The catalogue of flows: every connection a documented feature needs (or must never get), each with the upstream
source that says so, judged against everything that decides it: the NetworkPolicies of both ends (`netpol`) and,
where an end has an Envoy, Istio's PeerAuthentication and AuthorizationPolicies (`istio`). docs/flows.md is rendered
from `CATALOGUE` (`flows.markdown()`; a test keeps the two equal).

A flow is data: who calls whom, on which port and protocol, and the source. Its `find` turns it into the concrete
connections of one cluster (the model's `network.Cluster`: a pod of each workload, a stand-in new pod of each
namespace). An area's own module (flows_katib, flows_kserve, ...) adds its entries by defining a tuple of
`Flow` and joining it into `CATALOGUE` below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from . import flows_katib as katib
from . import flows_kserve as kserve
from . import flows_platform as platform
from .flows_platform import Connection
from .netpol import refusal
from .network import Cluster, open_namespaces

_CHART_VALUES = (
    "https://github.com/prometheus-community/helm-charts/blob/kube-prometheus-stack-88.5.3/charts/"
    "kube-prometheus-stack/values.yaml"
)
_PROFILE_CONTROLLER = (
    "https://github.com/kubeflow/dashboard/blob/v2.0.0/components/profile-controller/controllers/profile_controller.go"
)


@dataclass(frozen=True)
class Flow:
    """One kind of connection the platform promises open (`open`), or promises closed."""

    feature: str
    source: str
    destination: str
    ports: str
    protocol: str
    #: Where upstream says so: URL with tag or version, or the pinned file.
    citation: str
    find: Callable[[Cluster], Iterable[Connection]]
    open: bool = True
    #: For a closed flow: what it would give away, said when a policy lets it through.
    risk: str = "answers anyone"


CATALOGUE: tuple[Flow, ...] = (
    Flow(
        "cluster DNS",
        "every pod",
        "CoreDNS (`kube-system`, `k8s-app: kube-dns`)",
        "53",
        "UDP (TCP for long answers)",
        "https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/ ; the EKS coredns add-on's labels",
        platform.dns,
    ),
    Flow(
        "admission webhooks, aggregated APIs",
        "the API server (EKS control plane ENIs in the cluster subnets)",
        "each webhook's and APIService's pods",
        "the Service's `targetPort` (Service port 443 when unset)",
        "HTTPS",
        "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/ (v1.35)",
        platform.webhooks,
    ),
    Flow(
        "metrics",
        "Prometheus (`monitoring`, no sidecar: plaintext, refused by a STRICT mTLS port)",
        "every ServiceMonitor's and PodMonitor's target",
        "the endpoint's port",
        "HTTP GET on the endpoint's `path` (`/metrics`), or HTTPS",
        "https://prometheus-operator.dev/docs/api-reference/api/ (Endpoint, PodMetricsEndpoint), "
        "kube-prometheus-stack 88.5.3",
        platform.scrapes,
    ),
    Flow(
        "metrics",
        "Prometheus",
        "a new pod of every team namespace (its own metrics)",
        "9090 (any port: the team's monitors choose)",
        "HTTP GET `/metrics`",
        f"{_PROFILE_CONTROLLER} (`/metrics` open to any source in a Profile's namespace)",
        platform.team_scrapes,
    ),
    Flow(
        "dashboards and alerts",
        "Grafana, the Prometheus adapter; Prometheus and Grafana",
        "Prometheus; Alertmanager",
        "9090; 9093",
        "HTTP",
        f"{_CHART_VALUES} (prometheus.service.port, alertmanager.service.port)",
        platform.monitoring_clients,
    ),
    Flow(
        "Kubeflow sign-in",
        "the ALB (subnets of its scheme)",
        "the Istio ingress gateway",
        "8080, 15021 (health)",
        "HTTP with the signed-in user's Dex JWT",
        "https://kubernetes-sigs.github.io/aws-load-balancer-controller/v3.5/guide/ingress/annotations/ (target-type "
        "ip); pinned tree common/oauth2-proxy/components/istio-external-auth/",
        platform.load_balancer,
    ),
    Flow(
        "Kubeflow apps",
        "the Istio ingress gateway (its Envoy's mTLS identity)",
        "each app a VirtualService of `kubeflow-gateway` routes to",
        "the Service's `targetPort`",
        "HTTP with the user's `kubeflow-userid` header",
        "pinned tree: each app's VirtualService and AuthorizationPolicy (applications/*/upstream/)",
        platform.gateway_to_apps,
    ),
    Flow(
        "Kubeflow notebooks",
        "the Istio ingress gateway",
        "a notebook in a Profile's namespace",
        "8888",
        "HTTP with the owner's `kubeflow-userid` header",
        "https://github.com/kubeflow/notebooks/tree/v1.11.0/components/notebook-controller (Service port 80 -> "
        f"8888); {_PROFILE_CONTROLLER}",
        platform.gateway_to_notebooks,
    ),
    Flow(
        "notebook culling",
        "the notebook controller (`kubeflow`)",
        "each notebook",
        "8888",
        "HTTP GET `/notebook/<ns>/<name>/api/kernels`",
        "https://github.com/kubeflow/notebooks/blob/v1.11.0/components/notebook-controller/pkg/culler/culler.go; "
        f"{_PROFILE_CONTROLLER} (`GET */api/kernels` from the controller's identity)",
        platform.culler,
    ),
    Flow(
        "Istio",
        "every sidecar (a new pod of a Profile's namespace)",
        "istiod",
        "15012",
        "gRPC (xDS, certificates)",
        "https://istio.io/v1.30/docs/ops/deployment/application-requirements/ (ports used by Istio)",
        platform.istiod,
    ),
    Flow(
        "Kubeflow Pipelines, Katib",
        "a run's pods in a Profile's namespace (KFP's driver and launcher, Katib's metrics collector), with or "
        "without a sidecar",
        "the Pipelines API `ml-pipeline` (8888 HTTP, 8887 gRPC); ML Metadata `metadata-grpc-service` (8080); "
        "SeaweedFS (8333); Katib's DB manager (6789)",
        "8888, 8887, 8080, 8333, 6789",
        "gRPC and HTTP, no `kubeflow-userid` header",
        "https://github.com/kubeflow/pipelines/tree/2.16.1/backend/src/v2 (driver, launcher); pinned tree "
        "applications/pipeline/upstream/base/installs/multi-user/istio-authorization-config.yaml",
        platform.kubeflow_services,
    ),
    Flow(
        "Kubeflow's APIs from inside the cluster",
        "a new pod of a Profile's namespace",
        "the Istio ingress gateway",
        "8080",
        "HTTP",
        "pinned tree common/istio/istio-install/base/gateway_authorizationpolicy.yaml",
        platform.in_cluster_gateway,
    ),
    Flow(
        "AWS APIs (IRSA's STS, S3)",
        "a new pod of every team namespace",
        "an address outside the VPC",
        "443",
        "HTTPS",
        "https://docs.aws.amazon.com/eks/latest/userguide/iam-roles-for-service-accounts.html",
        platform.https_out,
    ),
    Flow(
        "AWS credentials (EKS Pod Identity)",
        "a pod of a namespace with a Pod Identity association",
        "the EKS Pod Identity agent (host network, 169.254.170.23)",
        "80",
        "HTTP",
        "https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html and pod-id-how-it-works.html",
        platform.pod_identity_agent,
    ),
    Flow(
        "team egress",
        "a new pod of a team stack's namespace",
        "each range of the team's `network.egress`",
        "its `ports`",
        "its `protocol` (TCP by default)",
        "docs/team-stacks.md; https://kubernetes.io/docs/concepts/services-networking/network-policies/ (ipBlock)",
        platform.team_egress,
    ),
    Flow(
        "Katib's suggestions (with `kubeflow.components.katib`)",
        "Katib's controller (`kubeflow`)",
        "an Experiment's suggestion pod in each Profile's namespace (no sidecar)",
        "6789 (suggestion), 6788 (early stopping)",
        "gRPC",
        "https://github.com/kubeflow/katib/blob/v0.19.0/pkg/controller.v1beta1/consts/const.go "
        "(DefaultSuggestionPort, DefaultEarlyStoppingPort)",
        katib.suggestions,
    ),
    Flow(
        "Katib's trial metrics (with `kubeflow.components.katib`)",
        "a trial pod in each Profile's namespace (its metrics collector)",
        "Katib's DB manager (`kubeflow`, `katib-db-manager`)",
        "6789",
        "gRPC",
        "https://github.com/kubeflow/katib/blob/v0.19.0/pkg/controller.v1beta1/consts/const.go "
        "(DefaultKatibDBManagerServicePort)",
        katib.trial_metrics,
    ),
    Flow(
        "a published model (`team.kubeflow.models`), for a signed-in user",
        "the Istio ingress gateway, with the Profile owner's `kubeflow-userid`",
        "the InferenceService's predictor pods (the team's namespace, with a sidecar)",
        "the route's predictor port",
        "HTTP (KServe's V1/V2 inference protocol)",
        "https://github.com/kserve/kserve/blob/v0.16.0/pkg/constants/constants.go (predictor labels); "
        + _PROFILE_CONTROLLER
        + " (ns-owner-access-istio)",
        kserve.signed_in,
    ),
    Flow(
        "a published model, for a listed token client",
        "a pod of the client's namespace, then the gateway with its service account's `kubeflow-userid`",
        "the gateway (port 8080), then the predictor pods",
        "8080; the route's predictor port",
        "HTTP with a projected service account token",
        "docs/kubeflow.md (reaching a model through the gateway); "
        "https://istio.io/v1.30/docs/reference/config/security/conditions/ (request.headers)",
        kserve.token_clients,
    ),
    Flow(
        "closed: the node's credentials (IMDS)",
        "a new pod of every team namespace",
        "the EC2 instance metadata service (169.254.169.254)",
        "80",
        "HTTP",
        "https://docs.aws.amazon.com/eks/latest/best-practices/identity-and-access-management.html (restrict access to "
        "the instance profile assigned to the worker node); the node classes' `httpPutResponseHopLimit: 1` is the "
        "second layer",
        platform.imds,
        open=False,
        risk="hands out the node role's credentials",
    ),
    Flow(
        "closed: Prometheus and Alertmanager answer anyone",
        "a pod of a team namespace",
        "Prometheus; Alertmanager",
        "9090; 9093",
        "HTTP",
        f"{_CHART_VALUES} (no authentication on either by default)",
        platform.team_to_monitoring,
        open=False,
    ),
)


def judge(cluster: Cluster, connection: Connection) -> str | None:
    """None when the connection gets through; else what stops it, naming the rule."""
    source, destination = connection.source, connection.destination
    policies = cluster.policies
    if connection.own_side_only:
        # Whether the far end admits the namespace is its owner's to say (`kubeflow.access`).
        policies = [p for p in policies if p["metadata"].get("namespace") == source.namespace]
    blocked = refusal(policies, source, destination, connection.port, connection.protocol)
    if blocked is not None:
        return blocked
    verdict = cluster.istio.decide(cluster.side(source), cluster.side(destination), connection.port, connection.request)
    return None if verdict.allowed else f"Istio: {verdict.reason}"


def problems(cluster: Cluster) -> list[str]:
    """Every catalogue flow the cluster breaks (a promised-open one stopped, a promised-closed one let through) and
    every namespace without a default deny."""
    found = []
    for flow, connection in connections(cluster):
        stopped = judge(cluster, connection)
        ends = f"{connection.source.what} {{}} {connection.destination.what} on port {connection.port}"
        if flow.open and stopped is not None:
            found.append(f"{ends.format('cannot reach')} ({connection.what}): {stopped}")
        elif not flow.open and stopped is None:
            found.append(f"{ends.format('can reach')}, which {flow.risk}")
    found += [f"namespace {n} has no default deny: {why}" for n, why in open_namespaces(cluster)]
    return found


def connections(cluster: Cluster) -> Iterator[tuple[Flow, Connection]]:
    """Every flow of the catalogue as the concrete connections of this cluster."""
    for flow in CATALOGUE:
        for connection in flow.find(cluster):
            yield flow, connection


def markdown() -> str:
    """docs/flows.md: the catalogue as a table."""
    lines = [
        "# Flows",
        "",
        (
            "<!-- Rendered from components/tools/cluster_model/flows.py "
            '(`.venv/bin/python -c "from components.tools.cluster_model.flows import markdown'
            "; print(markdown(), end='')\" > docs/flows.md`); a test keeps them equal. -->"
        ),
        "",
        (
            "Every connection a feature of the platform needs, and the ones it must never allow. The offline preview "
            "judges each one in the stack's model against the NetworkPolicies of both ends and, where an end runs an "
            "Envoy (a sidecar, the gateway), against Istio's PeerAuthentication and AuthorizationPolicies (including "
            "the `ns-owner-access-istio` policy Kubeflow's profile controller writes into each Profile's namespace at "
            "run time). A promised flow that something stops fails the preview, naming the policy that stops it."
        ),
        "",
        "| feature | from | to | port | protocol | open | source |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for flow in CATALOGUE:
        cells = (flow.feature, flow.source, flow.destination, flow.ports, flow.protocol)
        state = "yes" if flow.open else "**never**"
        lines.append("| " + " | ".join([*cells, state, flow.citation]) + " |")
    return "\n".join(lines) + "\n"
