"""Sign-in to Kubeflow as a team uses it: the `kubeflow.auth` config and what it refuses, the Dex config it renders
(checked against Dex's documented connector keys), KFAM's admins and contributor bindings, the gateway's check of
cluster tokens and its in-cluster path, and a user walked from the identity provider to their team's namespace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from components.config.errors import ConfigError
from components.kubeflow import access, auth, entries, network_policy, plan, render, transform
from components.kubeflow.config import KubeflowConfig, selected_entries, settings
from components.kubeflow.network_policy import Source
from components.kubeflow.objects import NAME_LABEL
from components.platform.parse import parse_config
from components.platform.secret_keys import secret_problems

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
needs_tree = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")

#: The keys of Dex's OIDC connector config (dexidp.io/docs/connectors/oidc/, "Configuration"): what Dex reads; an
#: unknown key is silently ignored by Dex, so a typo here would be a connector that does not do what it says.
DEX_OIDC_KEYS = {
    "issuer",
    "clientID",
    "clientSecret",
    "redirectURI",
    "basicAuthUnsupported",
    "scopes",
    "insecureSkipEmailVerified",
    "insecureEnableGroups",
    "insecureSkipVerify",
    "rootCAs",
    "getUserInfo",
    "userIDKey",
    "userNameKey",
    "promptType",
    "overrideClaimMapping",
    "claimMapping",
    "claimModifications",
    "acrValues",
    "providerDiscoveryOverrides",
}
#: Dex's connector entry: `type`, `id`, `name`, `config` (dexidp.io/docs/connectors/).
DEX_CONNECTOR_KEYS = {"type", "id", "name", "config"}

CORP = {
    "name": "Corp SSO",
    "issuer": "https://login.corp.io/oauth2/default",
    "clientId": "0oa1b2c3",
    "clientSecretKey": "kubeflowOidcClientSecret",
    "emailDomains": ["corp.io"],
}
BASE = {"enabled": True, "adminEmail": "platform@corp.io", "auth": {"connectors": {"corp": CORP}}}
TEAMS = {
    "vision": {"owner": "ana@corp.io", "s3Prefix": "teams/vision", "contributors": {"bo@corp.io": "edit"}},
    "speech": {"owner": "cy@corp.io", "s3Prefix": "teams/speech", "contributors": {"di@corp.io": "view"}},
}


def parse(**changes) -> KubeflowConfig:
    return KubeflowConfig.model_validate({**BASE, **changes})


def problems(**changes) -> str:
    with pytest.raises(ValidationError) as caught:
        parse(**changes)
    return str(caught.value)


# ------------------------------------------------------------------------------------------------ config


def test_a_team_owner_who_cannot_sign_in_is_an_error_naming_the_key():
    message = problems(teams={"vision": {"owner": "ana@elsewhere.io", "s3Prefix": "teams/vision"}})
    assert "teams.vision.owner: ana@elsewhere.io cannot sign in" in message
    assert "corp.io" in message  # says which domains would do


def test_without_a_connector_only_static_users_and_the_admin_sign_in():
    auth_ = {"staticUsers": {"ana": "ana@corp.io"}}
    config = parse(auth=auth_, teams={"vision": {"owner": "ana@corp.io", "s3Prefix": "teams/vision"}})
    assert config.auth.static_users == {"ana": "ana@corp.io"}
    message = problems(auth=auth_, teams={"vision": {"owner": "bo@corp.io", "s3Prefix": "teams/vision"}})
    assert "teams.vision.owner: bo@corp.io cannot sign in" in message
    assert "no connector is configured" in message


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"teams": {"vision": {**TEAMS["vision"], "contributors": {"eve@other.io": "edit"}}}},
            "teams.vision.contributors.eve@other.io: eve@other.io cannot sign in",
        ),
        (
            {"teams": {"vision": {**TEAMS["vision"], "contributors": {"ana@corp.io": "view"}}}},
            "teams.vision.contributors.ana@corp.io: is the team's owner",
        ),
        ({"teams": {"vision": {**TEAMS["vision"], "contributors": {"bo@corp.io": "admin"}}}}, "'edit' or 'view'"),
        ({"auth": {"connectors": {"corp": CORP}, "admins": ["boss@other.io"]}}, "auth.admins[0]: boss@other.io"),
        ({"auth": {"staticUsers": {"plat": "platform@corp.io"}}}, "auth.staticUsers.plat: platform@corp.io is already"),
        ({"auth": {"staticUsers": {"admin": "x@corp.io"}}}, "auth.staticUsers.admin: 'admin' is adminEmail's username"),
        ({"auth": {"connectors": {"corp": {**CORP, "issuer": "http://login.corp.io"}}}}, "an https:// URL"),
        ({"auth": {"connectors": {"corp": {**CORP, "emailDomains": []}}}}, "emailDomains"),
        ({"auth": {"connectors": {"corp": {**CORP, "clientSecret": "hunter2"}}}}, "clientSecret"),
        ({"auth": {"connectors": {"Corp": CORP}}}, "DNS label"),
        (
            {"access": {"mode": "alb", "certificateArn": "arn:aws:acm:us-west-2:123456789012:certificate/ab-12"}},
            "auth.connectors.corp.redirectUri: is required with an ALB without access.host",
        ),
        ({"access": {"clusterTokens": {"audiences": []}}}, "at least 1 item"),
        ({"access": {"clusterTokens": {"audiences": ["sts.amazonaws.com"]}}}, "IRSA's audience"),
    ],
)
def test_each_wrong_sign_in_input_is_a_clear_error(changes, expected):
    assert expected in problems(**changes)


def test_the_callback_follows_how_people_reach_the_dashboard():
    def callback(**changes) -> str:
        config = parse(**changes)
        facts = settings(config, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None)
        (connector,) = facts.sign_in.connectors
        return connector.redirect_uri

    assert callback() == "http://localhost:8080/dex/callback"  # the port-forward of docs/kubeflow.md
    alb = {"mode": "alb", "certificateArn": "arn:aws:acm:us-west-2:123456789012:certificate/ab-12"}
    assert callback(access={**alb, "host": "kf.corp.io"}) == "https://kf.corp.io/dex/callback"
    explicit = {**CORP, "redirectUri": "https://sso.corp.io/dex/callback"}
    assert callback(access=alb, auth={"connectors": {"corp": explicit}}) == "https://sso.corp.io/dex/callback"


def test_cluster_tokens_take_a_switch_or_their_settings():
    assert parse().access.cluster_tokens is None
    assert parse(access={"clusterTokens": False}).access.cluster_tokens is None
    switched_on = parse(access={"clusterTokens": True}).access.cluster_tokens
    assert switched_on is not None
    assert switched_on.audiences == ("pipelines.kubeflow.org",)
    tokens = parse(access={"clusterTokens": {"audiences": ["ci.corp.io"], "namespaces": ["ci"]}}).access.cluster_tokens
    assert tokens is not None
    assert (tokens.audiences, tokens.namespaces) == (("ci.corp.io",), ("ci",))
    assert entries.OAUTH2_PROXY_EKS_TOKENS in selected_entries(parse(access={"clusterTokens": True}))
    assert entries.OAUTH2_PROXY_EKS_TOKENS not in selected_entries(parse())


def raw_stack(**kubeflow) -> dict[str, str]:
    import json

    return {
        "aws:region": "us-west-2",
        "eks-ml-platform:environment": "dev",
        "eks-ml-platform:owner": "ml",
        "eks-ml-platform:network": json.dumps({"cidr": "10.20.0.0/16"}),
        "eks-ml-platform:cluster": json.dumps({"endpoint": {"public": False}}),
        "eks-ml-platform:kubeflow": json.dumps({**BASE, **kubeflow}),
    }


def test_the_client_secret_comes_from_the_config_key_it_names_set_as_a_secret():
    raw = {**raw_stack(), "eks-ml-platform:kubeflowOidcClientSecret": "s3cret"}
    config = parse_config(raw, project="eks-ml-platform", stack="dev")  # the named key is not an unknown setting
    assert config.kubeflow.auth.connectors["corp"].client_secret_key == "kubeflowOidcClientSecret"
    assert secret_problems(config, raw, ["eks-ml-platform:kubeflowOidcClientSecret"]) == []
    (plain,) = secret_problems(config, raw, [])
    assert plain.path == "kubeflow.auth.connectors.corp.clientSecretKey"
    assert "set in plain text" in plain.message
    assert "pulumi config set --secret kubeflowOidcClientSecret" in plain.message
    (missing,) = secret_problems(config, raw_stack(), [])
    assert "which is not set" in missing.message


def test_a_secret_key_may_not_name_a_platform_setting():
    raw = raw_stack(auth={"connectors": {"corp": {**CORP, "clientSecretKey": "owner"}}})
    with pytest.raises(ConfigError, match=r"kubeflow\.auth\.connectors\.corp\.clientSecretKey: names 'owner'"):
        parse_config(raw, project="eks-ml-platform", stack="dev")


def test_an_unset_client_secret_is_a_preview_warning():
    from components.tools.preview import placeholder_report
    from components.tools.stack_files import UNSET_SECRET_PLACEHOLDER, unset_secrets, with_unset_secrets

    raw, secret_keys = with_unset_secrets(raw_stack(), [])
    assert raw["eks-ml-platform:kubeflowOidcClientSecret"] == UNSET_SECRET_PLACEHOLDER
    assert secret_keys == ["eks-ml-platform:kubeflowOidcClientSecret"]
    assert unset_secrets(raw) == ["kubeflowOidcClientSecret"]
    config = parse_config(raw, project="eks-ml-platform", stack="dev")
    assert "kubeflowOidcClientSecret is not set" in placeholder_report(config, raw)
    set_already = {**raw_stack(), "eks-ml-platform:kubeflowOidcClientSecret": "s3cret"}
    assert with_unset_secrets(set_already, [])[0] == set_already


def test_the_shipped_stacks_sign_in_through_a_connector_whose_placeholders_are_reported():
    from components.tools.preflight.placeholders import placeholders
    from components.tools.stack_files import load_stack

    for stack in ("dev", "prod"):
        config, _, _ = load_stack(Path(__file__).resolve().parents[1], stack)
        assert config.kubeflow.auth.connectors, stack
        keys = {p.key for p in placeholders(config)}
        assert {
            "kubeflow.auth.connectors.corp.issuer",
            "kubeflow.auth.connectors.corp.clientId",
            "kubeflow.auth.connectors.corp.emailDomains",
        } <= keys, stack


# ------------------------------------------------------------------------------------------------ rendering


@pytest.fixture(scope="module")
def rendered(render_cache) -> dict[str, Any]:
    chosen = entries.selected(cluster_tokens=True)
    return render.render(REFERENCE, chosen, cache_dir=render_cache)


def company(**changes) -> plan.Settings:
    config = parse(
        teams=TEAMS,
        auth={"connectors": {"corp": CORP}, "staticUsers": {"tester": "tester@corp.io"}, "admins": ["head@corp.io"]},
        access={"clusterTokens": {"audiences": ["ci.corp.io"], "namespaces": ["ci"]}},
        **changes,
    )
    return settings(config, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None)


@pytest.fixture(scope="module")
def objects(rendered) -> list[dict[str, Any]]:
    return [item.manifest for item in plan.build(rendered, company())]


def find(objects, kind, namespace, name):
    return transform.find(objects, kind, namespace, name)


def dex_config(objects) -> dict[str, Any]:
    return yaml.safe_load(find(objects, "ConfigMap", "auth", "dex")["data"]["config.yaml"])


@needs_tree
def test_dex_renders_the_connector_with_only_documented_keys_and_no_secret_in_the_config_map(objects):
    config = dex_config(objects)
    (connector,) = config["connectors"]
    assert set(connector) <= DEX_CONNECTOR_KEYS
    assert set(connector["config"]) <= DEX_OIDC_KEYS
    assert connector["type"] == "oidc"
    assert connector["id"] == "corp"
    assert connector["config"]["issuer"] == CORP["issuer"]
    assert connector["config"]["clientID"] == CORP["clientId"]
    # Dex expands `$VAR` in connector configs from its environment (DEX_EXPAND_ENV unset: on): the value lives in
    # the dex-passwords Secret, which the Dex Deployment reads whole (envFrom).
    variable = connector["config"]["clientSecret"]
    assert re.fullmatch(r"\$[A-Z_]+", variable)
    secret = find(objects, "Secret", "auth", "dex-passwords")
    assert secret["stringData"][variable[1:]] == auth.connector_secret_placeholder("corp")
    deployment = find(objects, "Deployment", "auth", "dex")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {"secretRef": {"name": "dex-passwords"}} in container["envFrom"]
    assert "DEX_EXPAND_ENV" not in {e["name"] for e in container.get("env") or ()}


@needs_tree
def test_static_users_get_generated_passwords_and_never_share_the_admins(objects):
    users = {u["username"]: u for u in dex_config(objects)["staticPasswords"]}
    assert set(users) == {"admin", "tester"}
    assert users["tester"]["email"] == "tester@corp.io"
    assert users["tester"]["hashFromEnv"] != users["admin"]["hashFromEnv"]
    secret = find(objects, "Secret", "auth", "dex-passwords")["stringData"]
    assert secret[users["tester"]["hashFromEnv"]] == auth.static_user_placeholder("tester")


@needs_tree
def test_kfam_and_the_dashboard_know_the_admins(objects):
    # KFAM's `-cluster-admin` is `$(ADMIN)` from profiles-config, split on commas (kubeflow/dashboard
    # components/access-management/main.go); the dashboard asks KFAM.
    assert find(objects, "ConfigMap", "kubeflow", "profiles-config")["data"]["ADMIN"] == "platform@corp.io,head@corp.io"
    kfam = next(
        c
        for c in find(objects, "Deployment", "kubeflow", "profiles-deployment")["spec"]["template"]["spec"][
            "containers"
        ]
        if c["name"] == "access-management"
    )
    assert kfam["command"][kfam["command"].index("-cluster-admin") + 1] == "$(ADMIN)"
    assert {"configMapRef": {"name": "profiles-config"}} in kfam["envFrom"]


@needs_tree
def test_oauth2_proxy_admits_only_the_configured_domains_and_checks_certificates(objects):
    cfg = find(objects, "ConfigMap", "oauth2-proxy", "oauth2-proxy")["data"]["oauth2_proxy.cfg"]
    (line,) = [line for line in cfg.splitlines() if line.startswith("email_domains")]
    assert line == 'email_domains = [ "corp.io" ]'
    params = find(objects, "ConfigMap", "oauth2-proxy", "oauth2-proxy-parameters")["data"]
    assert params["ALLOW_SELF_SIGNED_ISSUER"] == "false"


@needs_tree
def test_contributors_get_kfams_binding_and_authorization_policy(objects):
    name = "user-bo-corp-io-clusterrole-edit"  # KFAM's getBindingName for User bo@corp.io, ClusterRole edit
    binding = find(objects, "RoleBinding", "vision", name)
    assert binding["metadata"]["annotations"] == {"user": "bo@corp.io", "role": "edit"}
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "kubeflow-edit",
    }
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bo@corp.io"}]
    policy = find(objects, "AuthorizationPolicy", "vision", name)
    assert policy["metadata"]["annotations"] == {"user": "bo@corp.io", "role": "edit"}
    (rule,) = policy["spec"]["rules"]
    assert rule["when"] == [{"key": "request.headers[kubeflow-userid]", "values": ["bo@corp.io"]}]
    # The principals KFAM admits, as profiles-config names them.
    config = find(objects, "ConfigMap", "kubeflow", "profiles-config")["data"]
    assert rule["from"] == [
        {"source": {"principals": [config["ISTIO_INGRESS_GATEWAY_PRINCIPAL"], config["KFP_UI_PRINCIPAL"]]}}
    ]
    viewer = find(objects, "RoleBinding", "speech", "user-di-corp-io-clusterrole-view")
    assert viewer["roleRef"]["name"] == "kubeflow-view"
    # kubeflow-edit and kubeflow-view are the ClusterRoles the rendered tree defines.
    assert find(objects, "ClusterRole", "", "kubeflow-edit")
    assert find(objects, "ClusterRole", "", "kubeflow-view")


@needs_tree
def test_cluster_tokens_are_accepted_only_for_the_configured_audiences(objects):
    authentication = find(objects, "RequestAuthentication", "istio-system", "m2m-token-issuer")
    (rule,) = authentication["spec"]["jwtRules"]
    assert rule["audiences"] == ["ci.corp.io"]
    assert rule["issuer"] == access.OIDC_ISSUER_PLACEHOLDER


@needs_tree
def test_the_default_audience_is_kubeflow_pipelines(rendered):
    staged = plan.platform_objects(rendered, plan.Settings(admin=company().admin, storage_class="gp3"))
    authentication = find([i.manifest for i in staged], "RequestAuthentication", "istio-system", "m2m-token-issuer")
    assert authentication["spec"]["jwtRules"][0]["audiences"] == ["pipelines.kubeflow.org"]


@needs_tree
def test_teams_and_named_namespaces_reach_the_gateway_in_the_cluster_and_others_do_not(objects):
    gateway = access.gateway_exposure(objects)
    policies = [o for o in objects if network_policy.is_network_policy(o)]
    port = gateway.ports[0]

    def reaches(namespace: str) -> bool:
        source = Source({NAME_LABEL: namespace}, {"app": "caller"})
        return network_policy.admits(
            policies, namespace=gateway.namespace, pod_labels=gateway.selector, port=port, source=source
        )

    assert reaches("vision")
    assert reaches("speech")
    assert reaches("ci")
    assert not reaches("default")


@needs_tree
def test_dex_owns_every_crd_it_would_otherwise_make_itself(objects):
    crds = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    assert {f"{plural}.dex.coreos.com" for _, plural, _ in auth.DEX_KINDS} <= crds
    dex_role = find(objects, "ClusterRole", "", "dex")
    # Dex may create CRDs (and would, were any missing), never delete them: Pulumi owning them is what removes them.
    assert any("customresourcedefinitions" in r.get("resources", ()) for r in dex_role["rules"])


# ------------------------------------------------------------------------------------------------ a user's way in


@needs_tree
def test_a_contributor_of_one_team_signs_in_and_is_bound_in_that_team_only(objects):
    email = "bo@corp.io"
    # 1. The identity provider's user comes through the connector: Dex has it, oauth2-proxy admits the domain.
    (connector,) = dex_config(objects)["connectors"]
    cfg = find(objects, "ConfigMap", "oauth2-proxy", "oauth2-proxy")["data"]["oauth2_proxy.cfg"]
    admitted = re.findall(r'"([^"]+)"', next(line for line in cfg.splitlines() if line.startswith("email_domains")))
    assert connector["id"] == "corp"
    assert email.rpartition("@")[2] in admitted
    # 2. The gateway turns Dex's token into the kubeflow-userid header (the email claim).
    dex_jwt = find(objects, "RequestAuthentication", "istio-system", "dex-jwt")
    assert {"header": "kubeflow-userid", "claim": "email"} in dex_jwt["spec"]["jwtRules"][0]["outputClaimToHeaders"]
    # 3. Kubernetes RBAC and Istio admit them in vision, and nowhere else.
    bound = {
        o["metadata"]["namespace"]
        for o in objects
        if o["kind"] == "RoleBinding" and any(s.get("name") == email for s in o.get("subjects") or ())
    }
    allowed = {
        o["metadata"]["namespace"]
        for o in objects
        if o["kind"] == "AuthorizationPolicy"
        and any(email in w.get("values", ()) for r in o["spec"].get("rules") or () for w in r.get("when") or ())
    }
    assert bound == allowed == {"vision"}
    # 4. Someone of another company is not admitted at all.
    assert "other.io" not in admitted
