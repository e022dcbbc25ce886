"""A model on the Kubeflow gateway (`components.kserve.route`, `ModelRoute`, a team's `kubeflow.models`): the path
a signed-in user and a token client call, who the predictor admits, the arguments refused, and the platform model
judging the paths the route opens."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from components import network_policies as netpol
from components.kserve.route import ModelRouteSpec, route_manifests
from components.kubeflow import access
from components.tools.cluster_model.flows import problems
from components.tools.cluster_model.network import Cluster
from components.tools.cluster_model.workloads import from_object

from .test_network_policies import profile_platform
from .test_platform_model import CHARTS

VIRTUAL_SERVICE = "kubernetes:networking.istio.io/v1:VirtualService"
AUTHORIZATION_POLICY = "kubernetes:security.istio.io/v1beta1:AuthorizationPolicy"


def test_the_model_is_served_under_its_namespace_and_name_on_the_kubeflow_gateway():
    route = route_manifests(ModelRouteSpec(namespace="vision", inference_service="llm-kserve"))["route"]
    assert route["metadata"]["namespace"] == "vision"
    assert route["spec"]["gateways"] == ["kubeflow/kubeflow-gateway"]
    (http,) = route["spec"]["http"]
    assert http["match"] == [{"uri": {"prefix": "/serving/vision/llm-kserve/"}}]
    # the model server sees its own paths: /serving/vision/llm-kserve/v1/models -> /v1/models
    assert http["rewrite"] == {"uri": "/"}
    assert http["route"] == [
        {"destination": {"host": "llm-kserve-predictor.vision.svc.cluster.local", "port": {"number": 80}}}
    ]


def test_signed_in_users_need_no_policy_of_the_routes_own():
    """The profile controller's `ns-owner-access-istio` and each contributor's policy already admit them; a route
    without token clients widens nothing."""
    assert set(route_manifests(ModelRouteSpec(namespace="vision", inference_service="llm"))) == {"route"}


def test_token_clients_are_admitted_only_as_forwarded_by_the_gateway_and_only_to_that_models_pods():
    spec = ModelRouteSpec(
        namespace="vision", inference_service="llm", token_clients=("ci/runner", "vision/default-editor")
    )
    policy = route_manifests(spec)["token-clients"]
    assert policy["metadata"]["namespace"] == "vision"
    assert policy["spec"]["action"] == "ALLOW"
    assert policy["spec"]["selector"] == {
        "matchLabels": {"serving.kserve.io/inferenceservice": "llm", "component": "predictor"}
    }
    (rule,) = policy["spec"]["rules"]
    assert rule["from"] == [
        {"source": {"principals": ["cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"]}}
    ]
    assert rule["when"] == [
        {
            "key": "request.headers[kubeflow-userid]",
            "values": ["system:serviceaccount:ci:runner", "system:serviceaccount:vision:default-editor"],
        }
    ]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"inference_service": "9-llm"}, "inference_service: '9-llm' is not an InferenceService name"),
        ({"inference_service": "m" * 54}, "at most 53 characters"),
        ({"namespace": "Vision"}, "namespace: 'Vision' is not a namespace name"),
        ({"token_clients": ("default-editor",)}, "token_clients: 'default-editor' is not '<namespace>/<service"),
        ({"token_clients": ("ci/a", "ci/a")}, "names a service account twice"),
        ({"predictor_port": 0}, "predictor_port: 0 is not a port"),
    ],
)
def test_a_route_that_cannot_work_is_refused_naming_the_argument(changes, expected):
    with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace("'", "'")):
        ModelRouteSpec(**{"namespace": "vision", "inference_service": "llm", **changes})


# ------------------------------------------------------------------------------------------- the platform model


GATEWAY_ACCOUNT = "istio-ingressgateway-service-account"
PROFILE = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "Profile",
    "metadata": {"name": "vision"},
    "spec": {"owner": {"kind": "User", "name": "vision-lead@corp.test"}},
}


def _as_istio_runs_it(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The gateway as Istio runs it: the proxyv2 image under its service account (its mTLS identity)."""
    if obj["kind"] != "Deployment" or obj["metadata"]["name"] != "istio-ingressgateway":
        return obj
    spec = obj["spec"]["template"]["spec"]
    containers = [{**c, "image": "docker.io/istio/proxyv2:1.30.1"} for c in spec["containers"]]
    template = {
        **obj["spec"]["template"],
        "spec": {**spec, "serviceAccountName": GATEWAY_ACCOUNT, "containers": containers},
    }
    return {**obj, "spec": {**obj["spec"], "template": template}}


def model_problems(cluster: Cluster) -> list[str]:
    """The problems with the model's paths (the stand-in platform's other pods are not all as Istio runs them),
    once the model has judged at least the gateway's path to the route's predictor (an empty list proves nothing
    if no path was judged)."""
    from components.tools.cluster_model import flows_kserve

    judged = {c.what for find in (flows_kserve.signed_in, flows_kserve.token_clients) for c in find(cluster)}
    assert "model vision/llm through the gateway" in judged, judged
    return [m for m in problems(cluster) if "of model vision/llm" in m or "(model vision/llm " in m]


def with_route(cluster: Cluster, spec: ModelRouteSpec, *extra: dict[str, Any]) -> Cluster:
    """The team's namespace as a Profile makes it (the profile controller's policy admits its owner), with the
    route's objects."""
    objects = [*map(_as_istio_runs_it, cluster.objects), PROFILE, *route_manifests(spec).values(), *extra]
    return Cluster(objects, [w for o in objects if (w := from_object("test", o)) is not None])


def gateway_allowances(namespaces: list[str]) -> list[dict[str, Any]]:
    """The gateway's pods isolated as upstream's policies isolate them, admitting in-cluster clients of these."""
    exposed = access.Exposed("istio-system", {"app": "istio-ingressgateway"}, (8080,))
    return [
        netpol.policy("istio-system", "deny", selects=dict(exposed.selector), ingress=[]),
        access.in_cluster_allowance(exposed, namespaces),
    ]


def test_the_gateway_reaches_a_published_models_predictor_in_a_profiles_namespace():
    spec = ModelRouteSpec(namespace="vision", inference_service="llm", predictor_port=8000)
    assert model_problems(with_route(profile_platform(), spec)) == []


def test_a_profile_namespace_closed_to_the_gateway_is_caught_naming_the_models_path():
    spec = ModelRouteSpec(namespace="vision", inference_service="llm", predictor_port=8000)
    found = problems(with_route(profile_platform("allow-istio-gateway"), spec))
    expected = (
        "Deployment istio-system/istio-ingressgateway (test) cannot reach the predictor of InferenceService "
        "vision/llm on port 8000 (model vision/llm through the gateway): its ingress side is isolated"
    )
    assert [m for m in found if m.startswith(expected)], found


def test_a_token_client_reaches_the_gateway_only_where_the_gateway_admits_its_namespace():
    spec = ModelRouteSpec(namespace="vision", inference_service="llm", token_clients=("vision/default-editor",))
    admitted = with_route(profile_platform(), spec, *gateway_allowances(["vision"]))
    assert model_problems(admitted) == []
    refused = problems(with_route(profile_platform(), spec, *gateway_allowances(["other"])))
    expected = (
        "a pod of vision running as default-editor cannot reach Deployment istio-system/istio-ingressgateway (test) "
        "on port 8080 (token client vision/default-editor of model vision/llm, to the gateway): "
    )
    assert [m for m in refused if m.startswith(expected)], refused


# ------------------------------------------------------------------------------------- a team stack, under mocks


MODELS = {"llm-kserve": {"port": 8000, "tokenClients": ["vision/default-editor"]}}


@pytest.fixture(scope="module")
def team_with_models():
    from .test_team_stack import run_team

    return run_team("dev", {"kubeflow": {"owner": "vision-lead@example.org", "models": MODELS}})


@pytest.mark.stack
def test_a_teams_models_are_published_in_its_profiles_namespace_and_go_with_it(team_with_models):
    (route,) = team_with_models.of_type(VIRTUAL_SERVICE)
    (policy,) = team_with_models.of_type(AUTHORIZATION_POLICY)
    namespace = team_with_models.one("kubernetes:core/v1:Namespace")
    assert route.inputs["spec"]["http"][0]["match"] == [{"uri": {"prefix": "/serving/vision/llm-kserve/"}}]
    assert policy.inputs["spec"]["rules"][0]["when"][0]["values"] == ["system:serviceaccount:vision:default-editor"]
    for made in (route, policy):
        assert made.inputs["metadata"]["namespace"] == "vision"
        assert team_with_models.depends_on(made, namespace)
        assert made.deleted_with == namespace.urn


def test_a_team_model_with_a_bad_name_or_client_is_refused_naming_each_key():
    import json

    from components.config.errors import ConfigError
    from components.team.config import parse_team_config

    models = {"Llm": {"tokenClients": ["default-editor"]}, "ok": {"tokenClients": ["ci/a", "ci/a"]}}
    team = {"name": "vision", "quota": {"gpus": 2}, "kubeflow": {"owner": "vision-lead@example.org", "models": models}}
    raw = {
        "aws:region": "us-west-2",
        "team-vision:platformStack": "acme/eks-ml-platform/dev",
        "team-vision:owner": "vision-leads",
        "team-vision:team": json.dumps(team),
    }
    with pytest.raises(ConfigError) as caught:
        parse_team_config(raw, project="team-vision", stack="dev")
    paths = {issue.path for issue in caught.value.issues}
    assert "team.kubeflow.models.Llm" in paths
    assert "team.kubeflow.models.Llm.tokenClients[0]" in paths
    assert "team.kubeflow.models.ok" in paths


@pytest.mark.subprocess
@pytest.mark.stack
@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository")
def test_on_prod_a_teams_published_model_is_reached_by_the_gateway_and_a_token_client_not_admitted_is_caught(
    prod, tmp_path
):
    """The platform's and the team's previews together, as the model sees a cluster: the gateway reaches the
    predictor; prod's gateway admits no in-cluster clients (no `clusterTokens`), so the token client is named."""
    from components.tools.cluster_model import check_views, flows_kserve
    from components.tools.cluster_model.platform import read_folder
    from components.tools.preview.folder import write_preview

    from .test_team_stack import run_team

    write_preview(prod, tmp_path / "prod")
    team = run_team(
        "prod", {"kubeflow": {"owner": "vision-lead@example.org", "models": MODELS}}, drop=("serviceAccount",)
    )
    write_preview(team, tmp_path / "team")
    platform, found = check_views([read_folder(tmp_path / "prod"), read_folder(tmp_path / "team")], CHARTS)
    cluster = Cluster([obj for _, obj in platform.objects], platform.workloads, platform.vpc)
    judged = {c.what for find in (flows_kserve.signed_in, flows_kserve.token_clients) for c in find(cluster)}
    client = "token client vision/default-editor of model vision/llm-kserve"
    assert judged == {
        "model vision/llm-kserve through the gateway",
        f"{client}, to the gateway",
        f"{client}, through the gateway",
    }
    messages = [str(p) for p in found]
    assert not [m for m in messages if "model vision/llm-kserve through the gateway)" in m]
    assert [m for m in messages if f"({client}, to the gateway)" in m]
    assert all("llm-kserve" in m for m in messages), messages
