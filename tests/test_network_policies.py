"""NetworkPolicies: the model's evaluator against Kubernetes' documented semantics (hand cases), and the platform's
policies judged with it: every needed path open, Prometheus and Alertmanager closed to team namespaces, and a
missing allowance caught."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

import pytest

from components import network_policies as netpol
from components.certmanager import network_policy as certmanager_policies
from components.kubeflow import access
from components.kubeflow import teams as kubeflow_teams
from components.network.tags import private_subnet_tags, public_subnet_tags
from components.network_policies import TEAM_LABEL
from components.observability.network_policy import monitoring_policies
from components.tools.cluster_model import StackView, check_views
from components.tools.cluster_model.addresses import from_resources
from components.tools.cluster_model.flows import problems
from components.tools.cluster_model.netpol import Endpoint, allowed
from components.tools.cluster_model.network import INGRESS_ONLY, Cluster
from components.tools.cluster_model.workloads import from_object
from components.tools.preview.answers import UNKNOWN

A = Endpoint("a", "10.0.0.10", "apps", {"team": "x"}, {"app": "a"}, {"web": 8080})
B = Endpoint("b", "10.0.0.11", "apps", {"team": "x"}, {"app": "b"}, {"web": 8080})
OTHER = Endpoint("other", "10.0.1.10", "tools", {}, {"app": "a"})
HOST = Endpoint("host agent", "10.0.2.10", "agents", {}, {"app": "h"}, host_network=True)
OUTSIDE = Endpoint("control plane", "10.0.3.10")


def deny(namespace="apps", **kw):
    return netpol.policy(namespace, "deny", ingress=[], **kw)


def test_a_pod_no_policy_selects_takes_everything():
    assert allowed([deny("tools")], A, B, 8080)


def test_an_ingress_only_policy_isolates_ingress_and_leaves_egress_open():
    assert not allowed([deny()], OTHER, A, 8080)
    assert allowed([deny()], A, OTHER, 8080)


def test_without_policy_types_a_policy_isolates_egress_only_when_it_has_an_egress_section():
    ingress_only = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": "apps"},
        "spec": {"podSelector": {}},
    }
    both = {**ingress_only, "spec": {"podSelector": {}, "egress": [{"to": [{"podSelector": {}}]}]}}
    assert allowed([ingress_only], A, OTHER, 80)
    assert not allowed([both], A, OTHER, 80)  # egress isolated: only pods of its namespace
    assert not allowed([both], OTHER, A, 80)  # and ingress too, always, with no rule to admit anyone


def test_a_connection_needs_the_sources_egress_and_the_destinations_ingress():
    out = netpol.policy("apps", "out", egress=[])
    assert not allowed([out], A, B, 8080)
    opened = netpol.policy("apps", "to-b", egress=[netpol.rule([netpol.pods({"app": "b"})], to=True)])
    assert allowed([out, opened], A, B, 8080)
    assert not allowed([out, opened, deny(selects={"app": "b"})], A, B, 8080)


def test_policies_add_up_across_policies_and_rules():
    only_b = netpol.policy("apps", "b", ingress=[netpol.rule([netpol.pods({"app": "b"})], to=False)])
    assert not allowed([deny(), only_b], OTHER, A, 8080)
    assert allowed([deny(), only_b], B, A, 8080)


@pytest.mark.parametrize(
    ("peer", "source", "expected"),
    [
        ({"podSelector": {"matchLabels": {"app": "a"}}}, OTHER, False),  # a podSelector alone: own namespace only
        ({"podSelector": {"matchLabels": {"app": "b"}}}, B, True),
        ({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "tools"}}}, OTHER, True),
        ({"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "b"}}}, OTHER, False),  # both: AND
        ({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}}, B, True),
        ({"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}}, OTHER, False),
        ({"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}}, OUTSIDE, True),
        ({"namespaceSelector": {}}, OUTSIDE, False),  # selectors pick pods, never the control plane
        ({"namespaceSelector": {}}, HOST, False),  # nor host-network pods: those only by address
        ({"ipBlock": {"cidr": "10.0.2.0/24"}}, HOST, True),
    ],
)
def test_peers_select_as_kubernetes_documents(peer, source, expected):
    policy = netpol.policy("apps", "p", ingress=[{"from": [peer]}])
    assert allowed([policy], source, A, 8080) is expected


@pytest.mark.parametrize(
    ("ports", "port", "protocol", "expected"),
    [
        ([{"port": 8080}], 8080, "TCP", True),
        ([{"port": 8080}], 8080, "UDP", False),  # protocol defaults to TCP
        ([{"port": 8000, "endPort": 8100}], 8080, "TCP", True),
        ([{"port": 8000, "endPort": 8050}], 8080, "TCP", False),
        ([{"port": "web"}], 8080, "TCP", True),  # a name: the destination's container port of that name
        ([{"port": "web"}], 9090, "TCP", False),
        ([{"protocol": "UDP"}], 53, "UDP", True),  # no port: every port of the protocol
    ],
)
def test_ports_match_as_kubernetes_documents(ports, port, protocol, expected):
    policy = netpol.policy("apps", "p", ingress=[{"ports": ports}])
    assert allowed([policy], B, A, port, protocol) is expected


def test_host_network_pods_are_never_isolated():
    everything = netpol.policy("agents", "deny", ingress=[], egress=[])
    assert allowed([everything], A, HOST, 9100)
    assert allowed([everything], HOST, A, 8080)


# ------------------------------------------------------------------------------------------- the platform's paths


def deployment(namespace, name, labels, ports=()):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "ports": [{"name": n, "containerPort": p} for n, p in ports]}
                    ]
                },
            },
        },
    }


def small_platform(drop: str | None = None):
    """Monitoring with Grafana, Prometheus and Alertmanager; cert-manager's webhook behind its Service; DNS; a
    team namespace with a notebook; the platform's policies, less `drop`."""
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {TEAM_LABEL: "team-a"}}},
        deployment("monitoring", "grafana", {"app.kubernetes.io/name": "grafana"}, [("grafana", 3000)]),
        deployment("monitoring", "prometheus", {"app.kubernetes.io/name": "prometheus"}, [("web", 9090)]),
        deployment("monitoring", "alertmanager", {"app.kubernetes.io/name": "alertmanager"}, [("web", 9093)]),
        deployment("kube-system", "coredns", {"k8s-app": "kube-dns"}),
        deployment("cert-manager", "webhook", {"app.kubernetes.io/component": "webhook"}, [("https", 10250)]),
        deployment("team-a", "notebook", {"app": "notebook"}),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "cert-manager-webhook", "namespace": "cert-manager"},
            "spec": {
                "selector": {"app.kubernetes.io/component": "webhook"},
                "ports": [{"port": 443, "targetPort": "https"}],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "cert-manager-webhook"},
            "webhooks": [{"clientConfig": {"service": {"name": "cert-manager-webhook", "namespace": "cert-manager"}}}],
        },
        *monitoring_policies("monitoring", metrics_adapter=False).values(),
        *certmanager_policies.policies("cert-manager", "monitoring").values(),
        *netpol.team_namespace("team-a", monitoring_namespace="monitoring").values(),
    ]
    objects = [o for o in objects if o["metadata"]["name"] != drop or o["kind"] != "NetworkPolicy"]
    workloads = [w for o in objects if (w := from_object("test", o)) is not None]
    return Cluster(objects, workloads)


def test_the_platforms_policies_open_every_needed_path_and_keep_prometheus_from_team_pods():
    assert problems(small_platform()) == []


@pytest.mark.parametrize(
    ("dropped", "expected"),
    [
        ("allow-webhooks", "the API server (control plane ENI) cannot reach Deployment cert-manager/webhook"),
        ("prometheus-clients", "Deployment monitoring/grafana (test) cannot reach Deployment monitoring/prometheus"),
        ("allow-grafana-out", "Deployment monitoring/grafana (test) cannot reach Deployment monitoring/alertmanager"),
        ("allow-dns", "Deployment monitoring/grafana (test) cannot reach Deployment kube-system/coredns"),
    ],
)
def test_a_missing_allowance_is_caught_naming_both_ends(dropped, expected):
    assert any(p.startswith(expected) for p in problems(small_platform(dropped)))


def test_without_the_monitoring_deny_a_team_notebook_is_held_by_its_own_namespaces_egress_deny():
    cluster = small_platform()
    cluster.policies = [p for p in cluster.policies if p["metadata"]["namespace"] != "monitoring"]
    assert not any("which answers anyone" in p for p in problems(cluster))


def test_without_the_monitoring_deny_nor_the_teams_a_team_notebook_reaches_prometheus_and_is_caught():
    cluster = small_platform()
    cluster.policies = [p for p in cluster.policies if p["metadata"]["namespace"] not in ("monitoring", "team-a")]
    found = problems(cluster)
    notebook = "Deployment team-a/notebook (test) can reach Deployment monitoring/prometheus (test) on port 9090"
    assert f"{notebook}, which answers anyone" in found
    assert any("monitoring/alertmanager" in p and "team-a" in p for p in found)


def gateway_objects() -> list[dict[str, Any]]:
    """The Kubeflow gateway behind an ALB without the load balancer's allowance: the gateway, its Service, the
    Ingress and upstream's deny in its namespace."""
    labels = {"istio": "ingressgateway"}
    return [
        deployment(access.GATEWAY_NAMESPACE, "gateway", labels, [("http", 8080), ("status", 15021)]),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": access.GATEWAY_SERVICE, "namespace": access.GATEWAY_NAMESPACE},
            "spec": {"selector": labels, "ports": [{"port": access.GATEWAY_HTTP_PORT, "targetPort": 8080}]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "kubeflow", "namespace": access.GATEWAY_NAMESPACE},
        },
        netpol.deny_all(access.GATEWAY_NAMESPACE),
    ]


def gateway(drop_allowance: bool):
    """The gateway behind an ALB, with the platform's load balancer allowance unless dropped, its sources left as the
    placeholder the registration fills with the VPC's ranges."""
    objects = gateway_objects()
    if not drop_allowance:
        objects.append(access.load_balancer_allowance(access.gateway_exposure(objects), ()))
    return Cluster(objects, [w for o in objects if (w := from_object("test", o)) is not None])


def test_the_load_balancer_reaches_the_gateway_only_through_its_allowance():
    assert problems(gateway(drop_allowance=False)) == []
    found = problems(gateway(drop_allowance=True))
    assert [p.split(" (")[0] for p in found if "the Kubeflow ALB" in p] == [
        "a load balancer in the VPC cannot reach Deployment istio-system/gateway"
    ] * 2


# ------------------------------------------------------------------------------------------- team namespaces


@pytest.mark.parametrize(
    ("dropped", "expected"),
    [
        (
            "allow-https-egress",
            "a new pod in team namespace team-a cannot reach an address outside the VPC on port 443",
        ),
        ("allow-prometheus", "Deployment monitoring/prometheus (test) cannot reach a new pod in team namespace team-a"),
    ],
)
def test_a_team_namespace_without_one_of_its_policies_is_caught(dropped, expected):
    assert any(p.startswith(expected) for p in problems(small_platform(dropped)))


VISION = kubeflow_teams.Team(name="vision", owner="lead@example.org", gpu_ceiling=1, s3_prefix="teams/vision")
VISION_POLICIES = [p["metadata"]["name"] for p in kubeflow_teams.network_policies(VISION, "monitoring")]


#: Upstream's shape in `kubeflow`: ingress denied, profile namespaces admitted to the services they call.
_PROFILES = {"namespaceSelector": {"matchLabels": {"app.kubernetes.io/part-of": "kubeflow-profile"}}}
UPSTREAM_KUBEFLOW = (
    netpol.policy("kubeflow", "deny", ingress=[]),
    netpol.policy("kubeflow", "profiles", ingress=[{"from": [_PROFILES]}]),
)


def profile_platform(*drop: str, kubeflow_policies=UPSTREAM_KUBEFLOW):
    """A Kubeflow team's namespace with its policies (less `drop`) beside the pods of Istio and Kubeflow it needs."""
    team = VISION
    objects = [
        kubeflow_teams.namespace(team),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}},
        deployment("kube-system", "coredns", {"k8s-app": "kube-dns"}),
        deployment("monitoring", "prometheus", {"app.kubernetes.io/name": "prometheus"}, [("web", 9090)]),
        deployment("istio-system", "istio-ingressgateway", {"app": "istio-ingressgateway"}, [("http2", 8080)]),
        deployment("istio-system", "istiod", {"app": "istiod"}, [("grpc-xds", 15012)]),
        deployment("kubeflow", "notebook-controller", {"app": "notebook-controller"}),
        deployment("kubeflow", "ml-pipeline", {"app": "ml-pipeline"}, [("http", 8888), ("grpc", 8887)]),
        deployment("kubeflow", "metadata-grpc", {"component": "metadata-grpc-server"}, [("grpc", 8080)]),
        deployment("kubeflow", "seaweedfs", {"app": "seaweedfs"}, [("s3", 8333)]),
        *kubeflow_teams.network_policies(team, "monitoring"),
        *kubeflow_policies,
    ]
    objects = [o for o in objects if o["metadata"]["name"] not in drop or o["kind"] != "NetworkPolicy"]
    return Cluster(objects, [w for o in objects if (w := from_object("test", o)) is not None])


def test_a_kubeflow_teams_namespace_denies_by_default_and_opens_what_its_pods_need():
    assert problems(profile_platform()) == []


@pytest.mark.parametrize(
    ("dropped", "expected"),
    [
        ("allow-dns", "a new pod in team namespace vision cannot reach Deployment kube-system/coredns"),
        (
            "allow-istio-gateway",
            (
                "Deployment istio-system/istio-ingressgateway (test) cannot reach a new pod in team namespace "
                "vision on port 8888 (a notebook through the gateway)"
            ),
        ),
        (
            "allow-notebook-culler",
            (
                "Deployment kubeflow/notebook-controller (test) cannot reach a new pod in team namespace vision "
                "on port 8888 (the notebook culler)"
            ),
        ),
        (
            "allow-istiod",
            "a new pod in team namespace vision cannot reach Deployment istio-system/istiod (test) on port 15012",
        ),
        (
            "allow-kubeflow-services",
            "a new pod in team namespace vision cannot reach Deployment kubeflow/ml-pipeline (test) on port 8887",
        ),
        (
            "allow-gateway-in-cluster",
            (
                "a new pod in team namespace vision cannot reach Deployment istio-system/istio-ingressgateway "
                "(test) on port 8080 (the gateway in the cluster)"
            ),
        ),
    ],
)
def test_a_kubeflow_teams_namespace_without_one_allowance_is_caught_naming_the_path(dropped, expected):
    assert any(p.startswith(expected) for p in problems(profile_platform(dropped)))


def test_a_kubeflow_teams_namespace_without_its_policies_is_caught():
    found = problems(profile_platform(*VISION_POLICIES))
    assert "namespace vision has no default deny: a pod in another namespace reaches a new pod there on port 31337" in (
        found
    )


def test_kubeflows_own_namespaces_may_isolate_ingress_only_and_no_other_namespace_may():
    assert "kubeflow" in INGRESS_ONLY
    assert problems(profile_platform()) == []  # `kubeflow` isolates ingress only
    ingress_only = (*UPSTREAM_KUBEFLOW, netpol.policy("vision", "deny-ingress", ingress=[]))
    found = problems(profile_platform(*VISION_POLICIES, kubeflow_policies=ingress_only))
    assert "namespace vision has no default deny: a new pod there reaches a pod in another namespace on port 31337" in (
        found
    )


def test_every_namespace_excused_from_egress_isolation_has_its_reason_in_the_security_page():
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "security.md").read_text()
    for namespace, reason in INGRESS_ONLY.items():
        assert f"| `{namespace}` | {reason} |" in page


# ------------------------------------------------------------------------------------------- the stack's addresses


def recorded_vpc(cidr: str, *secondary: str) -> list[dict[str, Any]]:
    """The network resources a preview records for a VPC the stack creates: the VPC, its secondary ranges, a
    private (node) and a public subnet tagged for load balancers as the network part tags them."""
    network = IPv4Network(cidr)
    quarters = list(network.subnets(prefixlen_diff=2))
    private, public = quarters[0], quarters[3]
    return [
        {"type": "aws:ec2/vpc:Vpc", "name": "network-vpc", "inputs": {"cidrBlock": cidr}},
        *(
            {
                "type": "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation",
                "name": f"extra-{i}",
                "inputs": {"cidrBlock": block},
            }
            for i, block in enumerate(secondary)
        ),
        {
            "type": "aws:ec2/subnet:Subnet",
            "name": "network-private-us-west-2a",
            "inputs": {"cidrBlock": str(private), "tags": private_subnet_tags("c")},
        },
        {
            "type": "aws:ec2/subnet:Subnet",
            "name": "network-public-us-west-2a",
            "inputs": {"cidrBlock": str(public), "tags": public_subnet_tags()},
        },
    ]


def test_the_model_reads_the_vpc_its_secondary_ranges_and_its_subnets_by_role_from_the_preview():
    vpc = from_resources(recorded_vpc("10.20.0.0/16", "100.64.0.0/16"))
    assert vpc is not None
    assert vpc.known
    assert vpc.cidrs == (IPv4Network("10.20.0.0/16"), IPv4Network("100.64.0.0/16"))
    assert vpc.node_subnets == (IPv4Network("10.20.0.0/18"),)
    assert vpc.public_subnets == (IPv4Network("10.20.192.0/18"),)
    assert from_resources([]) is None  # an existing VPC: only AWS knows its ranges


def webhook_platform(*, allowance_cidr: str, vpc_cidr: str) -> list[str]:
    """A team namespace serving a webhook, its allowance admitting the API server from `allowance_cidr`, judged by
    the model of a preview whose VPC is `vpc_cidr`: the network-policy problems."""
    labels = {"app": "hook"}
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {TEAM_LABEL: "team-a"}}},
        deployment("team-a", "hook", labels, [("https", 9443)]),
        deployment("kube-system", "coredns", {"k8s-app": "kube-dns"}),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "hook", "namespace": "team-a"},
            "spec": {"selector": labels, "ports": [{"port": 443, "targetPort": "https"}]},
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "hook"},
            "webhooks": [
                {"name": "hook.example.org", "clientConfig": {"service": {"name": "hook", "namespace": "team-a"}}}
            ],
        },
        *netpol.team_namespace(
            "team-a", monitoring_namespace=None, webhook_ports=[9443], vpc_cidr=allowance_cidr
        ).values(),
    ]
    return judged(objects, recorded_vpc(vpc_cidr))


def judged(objects: list[dict[str, Any]], resources: list[dict[str, Any]]) -> list[str]:
    view = StackView(resources, [("manifests/all.yaml", o) for o in objects], [])
    _, found = check_views([view], None)
    return [p.message for p in found if p.rule == "network-policy"]


def test_a_webhook_allowance_is_judged_against_the_stacks_vpc_not_a_default_one():
    assert webhook_platform(allowance_cidr="10.20.0.0/16", vpc_cidr="10.20.0.0/16") == []
    # built for the default range in a stack whose VPC is another: the API server's calls never arrive
    found = webhook_platform(allowance_cidr="10.0.0.0/16", vpc_cidr="10.20.0.0/16")
    assert any(p.startswith("the API server (control plane ENI) cannot reach Deployment team-a/hook") for p in found)


def test_prometheus_open_to_all_but_a_wrong_vpc_range_is_caught_answering_team_pods():
    """An allowance meant for "outside the VPC only" whose `except` names the default range, not the stack's: the
    stack's own pods, a team's notebook among them, reach Prometheus."""

    def found(excepted: str) -> list[str]:
        outside_only = {"ipBlock": {"cidr": "0.0.0.0/0", "except": [excepted]}}
        objects = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {TEAM_LABEL: "t"}}},
            deployment("monitoring", "prometheus", {"app.kubernetes.io/name": "prometheus"}, [("web", 9090)]),
            deployment("team-a", "notebook", {"app": "notebook"}),
            netpol.deny_all("monitoring"),
            netpol.policy("monitoring", "from-outside", ingress=[netpol.rule([outside_only], to=False)]),
        ]
        return [p for p in judged(objects, recorded_vpc("10.20.0.0/16")) if "which answers anyone" in p]

    assert found("10.20.0.0/16") == []
    prometheus = "Deployment monitoring/prometheus (manifests/all.yaml) on port 9090, which answers anyone"
    assert found("10.0.0.0/16") == [
        f"Deployment team-a/notebook (manifests/all.yaml) can reach {prometheus}",
        f"a pod in team namespace team-a can reach {prometheus}",
    ]


def test_an_existing_vpcs_unknown_ranges_are_judged_in_a_stand_in_that_the_model_names():
    """In an existing VPC the preview records the ALB allowance's sources as unknown (read from AWS at deploy time):
    the model judges them as the VPC's ranges, in a stand-in VPC it says it used."""
    objects = gateway_objects()
    allowance = access.load_balancer_allowance(access.gateway_exposure(objects), ())
    allowance["spec"]["ingress"][0]["from"] = [{"ipBlock": {"cidr": UNKNOWN}}]  # as the preview records it
    platform, found = check_views([StackView([], [("m", o) for o in [*objects, allowance]], [])], None)
    assert [p for p in found if p.rule == "network-policy"] == []
    assert not platform.vpc.known
    assert "stand-in VPC 10.0.0.0/16" in platform.vpc.describe()
