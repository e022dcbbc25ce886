"""The monitoring namespaces' NetworkPolicies (pure): default deny, and only the paths the monitoring stack uses.

Prometheus and Alertmanager answer anyone who reaches them, without authentication: reading every metric, or
silencing every alert, takes only a connection. So they admit only their clients (Grafana, the metrics adapter,
Prometheus itself, Alertmanager's peers), never a notebook or another namespace's pod.
"""

from __future__ import annotations

from .. import network_policies as netpol
from ..network_policies import ALERTMANAGER_POD, PROMETHEUS_POD, Manifest
from .adapter import PROMETHEUS_PORT

GRAFANA_POD = {"app.kubernetes.io/name": "grafana"}
ADAPTER_POD = {"app.kubernetes.io/name": "prometheus-adapter"}
OPERATOR_POD = {"app": "kube-prometheus-stack-operator"}
#: Alertmanager's API (Prometheus pushes alerts, Grafana reads them) and its peers' gossip (TCP and UDP), as the
#: Prometheus operator configures its pods (prometheus-operator pkg/alertmanager/statefulset.go).
ALERTMANAGER_PORT = 9093
ALERTMANAGER_CLUSTER_PORT = 9094
#: The operator's admission webhook (kube-prometheus-stack `prometheusOperator.tls.internalPort`) and the metrics
#: adapter's aggregated API (prometheus-adapter chart `listenPort`): both called by the API server.
OPERATOR_WEBHOOK_PORT = 10250
ADAPTER_PORT = 6443


def monitoring_policies(namespace: str, *, metrics_adapter: bool) -> dict[str, Manifest]:
    """Every policy of the monitoring namespace, keyed by name."""
    here = netpol.pods
    found = [
        netpol.deny_all(namespace),
        netpol.allow_dns(namespace),
        # The API server (operator, Grafana's sidecars, kube-state-metrics, the adapter, the admission jobs).
        netpol.allow_https_egress(namespace),
        netpol.allow_prometheus(namespace, namespace),
        netpol.allow_webhooks(namespace, [OPERATOR_WEBHOOK_PORT], selects=OPERATOR_POD, name="allow-operator-webhook"),
        # Scrapes reach every namespace and every node (kubelet, node exporter on the host network), on ports
        # the monitors choose; alerts leave for receivers anywhere.
        netpol.policy(namespace, "allow-prometheus-out", selects=PROMETHEUS_POD, egress=[{}]),
        netpol.policy(namespace, "allow-alertmanager-out", selects=ALERTMANAGER_POD, egress=[{}]),
        netpol.policy(
            namespace,
            "prometheus-clients",
            selects=PROMETHEUS_POD,
            ingress=[netpol.rule([here(GRAFANA_POD), here(ADAPTER_POD)], netpol.ports(PROMETHEUS_PORT), to=False)],
        ),
        netpol.policy(
            namespace,
            "alertmanager-clients",
            selects=ALERTMANAGER_POD,
            ingress=[
                netpol.rule([here(GRAFANA_POD)], netpol.ports(ALERTMANAGER_PORT), to=False),
                netpol.rule(
                    [here(ALERTMANAGER_POD)],
                    netpol.ports(ALERTMANAGER_CLUSTER_PORT) + netpol.ports(ALERTMANAGER_CLUSTER_PORT, protocol="UDP"),
                    to=False,
                ),
            ],
        ),
        netpol.policy(
            namespace,
            "allow-grafana-out",
            selects=GRAFANA_POD,
            egress=[
                netpol.rule([here(PROMETHEUS_POD)], netpol.ports(PROMETHEUS_PORT), to=True),
                netpol.rule([here(ALERTMANAGER_POD)], netpol.ports(ALERTMANAGER_PORT), to=True),
            ],
        ),
    ]
    if metrics_adapter:
        found += [
            netpol.allow_webhooks(namespace, [ADAPTER_PORT], selects=ADAPTER_POD, name="allow-metrics-api"),
            netpol.policy(
                namespace,
                "allow-adapter-out",
                selects=ADAPTER_POD,
                egress=[netpol.rule([here(PROMETHEUS_POD)], netpol.ports(PROMETHEUS_PORT), to=True)],
            ),
        ]
    return {p["metadata"]["name"]: p for p in found}


def node_exporter_policies(namespace: str) -> dict[str, Manifest]:
    """node-exporter runs on the host network, which no NetworkPolicy governs (Kubernetes docs, Network Policies:
    host-network pods are outside their scope); the deny keeps any other pod put here closed."""
    return {"deny-all": netpol.deny_all(namespace)}
