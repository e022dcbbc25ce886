"""Kubeflow under enforced NetworkPolicies: the platform's Prometheus reaches every pod of every namespace upstream
isolates, the API server still reaches every webhook behind its Service, and a plan that breaks either is refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from components.kubeflow import access, entries, network_policy, plan, render
from components.kubeflow.credentials import Admin
from components.kubeflow.network_policy import OUTSIDE, Source, admits

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")
EVERYTHING = entries.selected(katib=True, spark=True, hub=True, knative=True)
SETTINGS = plan.Settings(admin=Admin("platform@example.org"), storage_class="gp3", monitoring_namespace="monitoring")
PROMETHEUS = Source(
    namespace_labels={"kubernetes.io/metadata.name": "monitoring"}, pod_labels={"app.kubernetes.io/name": "prometheus"}
)


@pytest.fixture(scope="module")
def rendered(render_cache):
    return render.render(REFERENCE, EVERYTHING, cache_dir=render_cache)


@pytest.fixture(scope="module")
def objects(rendered) -> list[dict[str, Any]]:
    return [item.manifest for item in plan.platform_objects(rendered, SETTINGS)]


def ml_pipeline_api(objects) -> network_policy.Pod:
    """The Pipelines API server: upstream admits only the gateway and profile namespaces to it."""
    return next(
        p for p in network_policy.pods(objects) if p.namespace == "kubeflow" and p.labels.get("app") == "ml-pipeline"
    )


def test_prometheus_reaches_every_port_of_every_kubeflow_pod(objects):
    isolated = set(network_policy.isolated_namespaces(objects))
    assert {"kubeflow", "kubeflow-system", "istio-system", "auth", "oauth2-proxy", "knative-serving"} <= isolated
    ports = [(pod, port, name) for pod in network_policy.pods(objects) for port, name in pod.ports]
    assert len(ports) > 50
    blocked = [
        (pod.workload, port)
        for pod, port, name in ports
        if not admits(
            objects, namespace=pod.namespace, pod_labels=pod.labels, port=port, port_name=name, source=PROMETHEUS
        )
    ]
    assert blocked == []


def test_without_the_allowance_upstreams_policies_drop_the_scrapes(rendered):
    objects = [
        i.manifest for i in plan.platform_objects(rendered, dataclasses.replace(SETTINGS, monitoring_namespace=None))
    ]
    api = ml_pipeline_api(objects)
    assert not admits(objects, namespace=api.namespace, pod_labels=api.labels, port=api.ports[0][0], source=PROMETHEUS)
    assert not [o for o in objects if o["metadata"]["name"] == network_policy.ALLOW_MONITORING]


def test_the_allowance_admits_only_the_monitoring_namespace(objects):
    stranger = Source(namespace_labels={"kubernetes.io/metadata.name": "team-a"}, pod_labels={"app": "x"})
    api = ml_pipeline_api(objects)
    assert not admits(objects, namespace=api.namespace, pod_labels=api.labels, port=api.ports[0][0], source=stranger)


def test_the_api_server_reaches_every_webhook_behind_its_service(objects):
    backends = network_policy.webhook_backends(objects)
    assert len({b.webhook for b in backends}) >= 10  # every component's webhooks, not a few
    # Trainer's webhook policy selects a label Istio's injector adds: the pods are judged as they run.
    trainer = next(b for b in backends if b.webhook == "validator.trainer.kubeflow.org")
    assert trainer.pod.labels["service.istio.io/canonical-name"] == "trainer"
    assert trainer.port == 9443
    assert network_policy.problems(objects, "monitoring") == []


def test_a_policy_that_closes_a_webhooks_port_is_refused(rendered, objects):
    closing = [
        o
        for o in objects
        if not (
            o["kind"] == "NetworkPolicy"
            and o["metadata"]["namespace"] == "kubeflow-system"
            and any("from" not in rule for rule in o["spec"].get("ingress") or ())
        )
    ]
    found = network_policy.problems(closing, "monitoring")
    assert any("validator.trainer.kubeflow.org" in p and "9443" in p for p in found)
    backend = next(b for b in network_policy.webhook_backends(closing) if b.webhook == "validator.trainer.kubeflow.org")
    assert not admits(
        closing, namespace=backend.pod.namespace, pod_labels=backend.pod.labels, port=9443, source=OUTSIDE
    )


def test_behind_an_alb_the_load_balancer_reaches_the_gateway_pods_from_the_vpc(rendered):
    alb = plan.Alb(
        "arn:aws:acm:us-west-2:123456789012:certificate/abc", source_cidrs=("10.0.192.0/26", "10.0.192.64/26")
    )
    objects = [i.manifest for i in plan.platform_objects(rendered, dataclasses.replace(SETTINGS, access=alb))]
    (allowance,) = [o for o in objects if o["metadata"]["name"] == access.ALLOW_LOAD_BALANCER]
    (rule,) = allowance["spec"]["ingress"]
    assert rule["from"] == [{"ipBlock": {"cidr": "10.0.192.0/26"}}, {"ipBlock": {"cidr": "10.0.192.64/26"}}]
    assert {p["port"] for p in rule["ports"]} == {8080, 15021}  # the Service's port 80 targets 8080; the health check
    gateway = next(
        p for p in network_policy.pods(objects) if p.workload == "Deployment istio-system/istio-ingressgateway"
    )
    for port in (8080, 15021):
        assert admits(objects, namespace="istio-system", pod_labels=gateway.labels, port=port, source=OUTSIDE)
    # Without it, upstream's policies admit only pods of istio-system: the ALB's requests would be dropped.
    without = [o for o in objects if o is not allowance]
    assert not admits(without, namespace="istio-system", pod_labels=gateway.labels, port=8080, source=OUTSIDE)
    exposed = access.gateway_exposure(objects)
    assert any(
        "the load balancer cannot reach port 8080" in p for p in network_policy.problems(without, "monitoring", exposed)
    )
    assert network_policy.problems(objects, "monitoring", exposed) == []
    # Pods never reach the gateway through it: they are no address range.
    team_pod = Source(namespace_labels={"kubernetes.io/metadata.name": "ml-research"}, pod_labels={"app": "notebook"})
    assert not admits(objects, namespace="istio-system", pod_labels=gateway.labels, port=8080, source=team_pod)
    # The pods get the load balancer controller's readiness gate, so the ALB stops routing to one before it goes.
    (namespace,) = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == "istio-system"]
    assert namespace["metadata"]["labels"]["elbv2.k8s.aws/pod-readiness-gate-inject"] == "enabled"
    # Where only AWS knows the ALB's subnets, the peers are left for the registration to fill.
    unknown = dataclasses.replace(alb, source_cidrs=())
    objects = [i.manifest for i in plan.platform_objects(rendered, dataclasses.replace(SETTINGS, access=unknown))]
    (allowance,) = [o for o in objects if o["metadata"]["name"] == access.ALLOW_LOAD_BALANCER]
    assert allowance["spec"]["ingress"][0]["from"] == access.LOAD_BALANCER_SOURCES_PLACEHOLDER
    assert network_policy.problems(objects, "monitoring", exposed) == []
    # With port-forward nothing is opened to the VPC.
    assert not [
        o
        for o in plan.platform_objects(rendered, SETTINGS)
        if o.manifest["metadata"]["name"] == access.ALLOW_LOAD_BALANCER
    ]
