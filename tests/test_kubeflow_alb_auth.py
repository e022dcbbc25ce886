"""The Kubeflow ALB authenticating people before the gateway (`kubeflow.access.albAuth`): the Ingress annotations and
the client Secret checked against the load balancer controller's contract at the pinned version
(tests/data/lbc-auth-contract.json, recorded from its source), what lets the controller read that Secret and the
Cognito client, the order the objects go in, each wrong input as a clear error, and a preview with it on."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.errors import ConfigError
from components.ingress import names as lb_names
from components.ingress.component import controller_values
from components.ingress.iam import ControllerScope, controller_policy
from components.kubeflow import access, alb_auth, staging
from components.kubeflow.config import KubeflowConfig, settings
from components.kubeflow.objects import key
from components.kubeflow.staging import Item
from components.platform.parse import parse_config
from components.platform.secret_keys import secret_problems
from components.scheduling import Placement
from tests.conftest import REPO
from tests.iam_evaluator import ALLOW, decide

CONTRACT = json.loads((Path(__file__).parent / "data" / "lbc-auth-contract.json").read_text())
CHART_VALUES = REPO.parent / "shared" / "reference" / "aws-load-balancer-controller" / "chart" / "values.yaml"
PROJECT = "eks-ml-platform"

CERTIFICATE = "arn:aws:acm:us-west-2:123456789012:certificate/0f1e2d3c-aaaa"
POOL = "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbC123xyz"
OIDC = {
    "type": "oidc",
    "issuer": "https://login.corp.io",
    "authorizationEndpoint": "https://login.corp.io/oauth2/v1/authorize",
    "tokenEndpoint": "https://login.corp.io/oauth2/v1/token",
    "userInfoEndpoint": "https://login.corp.io/oauth2/v1/userinfo",
    "clientId": "0oa-kubeflow-alb",
    "clientSecretKey": "kubeflowAlbClientSecret",
}
COGNITO = {"type": "cognito", "userPoolArn": POOL, "userPoolClientId": "4h5j6k7l8m", "userPoolDomain": "corp-kubeflow"}


def alb_access(**auth) -> dict[str, Any]:
    access_ = {"mode": "alb", "certificateArn": CERTIFICATE, "host": "kf.corp.io"}
    return {**access_, "albAuth": auth} if auth else access_


def alb_of(**auth) -> access.Alb:
    config = KubeflowConfig.model_validate(
        {"enabled": True, "adminEmail": "platform@corp.io", "access": alb_access(**auth)}
    )
    facts = settings(config, storage_class="gp3", gpu_node_pools=(), gpu_scheduler=None)
    assert facts.access is not None
    return facts.access


def auth_annotations(ingress: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in ingress["metadata"]["annotations"].items() if "/auth-" in k}


# --------------------------------------------------------------------- the controller's contract


def test_the_oidc_action_is_annotated_as_the_controller_reads_it_with_its_client_in_a_secret_beside_the_ingress():
    alb = alb_of(**OIDC, scopes=["openid", "email"], sessionTimeoutSeconds=3600, onUnauthenticatedRequest="deny")
    ingress = access.ingress(alb, {})
    found = auth_annotations(ingress)
    assert set(found) <= set(CONTRACT["annotations"])
    assert found[alb_auth.AUTH_TYPE] == "oidc"
    assert found[alb_auth.AUTH_TYPE] in CONTRACT["annotations"][alb_auth.AUTH_TYPE]["values"]
    assert CONTRACT["idpAnnotationOfType"]["cognito"] not in found
    idp_key = CONTRACT["idpAnnotationOfType"]["oidc"]
    idp = json.loads(found[idp_key])
    assert (
        set(CONTRACT["annotations"][idp_key]["required"]) <= set(idp) <= set(CONTRACT["annotations"][idp_key]["json"])
    )
    assert (idp["issuer"], idp["authorizationEndpoint"], idp["tokenEndpoint"], idp["userInfoEndpoint"]) == (
        OIDC["issuer"],
        OIDC["authorizationEndpoint"],
        OIDC["tokenEndpoint"],
        OIDC["userInfoEndpoint"],
    )
    on_unauthenticated = found["alb.ingress.kubernetes.io/auth-on-unauthenticated-request"]
    assert on_unauthenticated == "deny"
    assert (
        on_unauthenticated
        in CONTRACT["annotations"]["alb.ingress.kubernetes.io/auth-on-unauthenticated-request"]["values"]
    )
    assert found["alb.ingress.kubernetes.io/auth-scope"] == "openid email"  # space-separated
    assert found["alb.ingress.kubernetes.io/auth-session-timeout"] == "3600"
    # The controller adds the action only to HTTPS listeners: the ALB must have one, and port 80 only redirects.
    listeners = json.loads(ingress["metadata"]["annotations"]["alb.ingress.kubernetes.io/listen-ports"])
    assert {"HTTPS": 443} in listeners
    assert ingress["metadata"]["annotations"]["alb.ingress.kubernetes.io/ssl-redirect"] == "443"

    # The Secret it names lives in the Ingress's namespace and holds the keys the controller reads.
    secrets = [o for o in access.authentication(alb) if o["kind"] == "Secret"]
    (secret,) = secrets
    assert (secret["metadata"]["namespace"], secret["metadata"]["name"]) == (
        ingress["metadata"]["namespace"],
        idp["secretName"],
    )
    client_id_keys = set(CONTRACT["oidcSecret"]["clientIdKeys"]) & set(secret["stringData"])
    assert len(client_id_keys) == 1
    assert secret["stringData"][client_id_keys.pop()] == OIDC["clientId"]
    # The client secret comes from the stack's secret config at registration, never from the stack file.
    assert secret["stringData"][CONTRACT["oidcSecret"]["clientSecretKey"]] == alb_auth.CLIENT_SECRET_PLACEHOLDER


def test_the_cognito_action_names_the_pool_client_and_domain_and_needs_no_secret():
    alb = alb_of(**COGNITO)
    found = auth_annotations(access.ingress(alb, {}))
    idp_key = CONTRACT["idpAnnotationOfType"]["cognito"]
    assert found[alb_auth.AUTH_TYPE] == "cognito"
    assert CONTRACT["idpAnnotationOfType"]["oidc"] not in found
    idp = json.loads(found[idp_key])
    assert (
        set(CONTRACT["annotations"][idp_key]["required"]) <= set(idp) <= set(CONTRACT["annotations"][idp_key]["json"])
    )
    assert idp == {"userPoolARN": POOL, "userPoolClientID": "4h5j6k7l8m", "userPoolDomain": "corp-kubeflow"}
    # The defaults are the ALB's, written out.
    assert found["alb.ingress.kubernetes.io/auth-on-unauthenticated-request"] == "authenticate"
    assert found["alb.ingress.kubernetes.io/auth-scope"] == "openid"
    assert found["alb.ingress.kubernetes.io/auth-session-timeout"] == "604800"
    assert access.authentication(alb) == []


def test_without_alb_auth_the_alb_forwards_every_request():
    alb = alb_of()
    assert auth_annotations(access.ingress(alb, {})) == {}
    assert access.authentication(alb) == []


@pytest.mark.skipif(
    not CHART_VALUES.is_file(), reason="../shared/reference (the pinned chart values) is not beside the repository"
)
def test_only_the_load_balancer_controller_may_read_the_client_secret_and_only_that_secret():
    # The chart lets the controller read no Secret unless told to, and the platform does not tell it to.
    chart = yaml.safe_load(CHART_VALUES.read_text())
    assert chart["clusterSecretsPermissions"]["allowAllSecrets"] is CONTRACT["chartReadsAllSecretsByDefault"] is False
    values = controller_values(
        cluster_name="c",
        region="us-west-2",
        vpc_id="vpc-1",
        service_account_annotations={},
        placement=Placement({}, ()),
        tags={},
    )
    assert "clusterSecretsPermissions" not in values
    account = values["serviceAccount"]["name"]

    objects = {o["kind"]: o for o in access.authentication(alb_of(**OIDC))}
    secret, role, binding = objects["Secret"], objects["Role"], objects["RoleBinding"]
    namespace = secret["metadata"]["namespace"]
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == namespace
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": lb_names.NAMESPACE}]
    # get, and list/watch by name (the controller watches the one Secret with a field selector on its name).
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": [secret["metadata"]["name"]],
            "verbs": ["get", "list", "watch"],
        }
    ]


def test_the_controllers_iam_policy_lets_it_describe_the_cognito_client():
    scope = ControllerScope(
        partition="aws", region="us-west-2", account_id="123456789012", vpc_id="vpc-1", cluster_name="ml"
    )
    policy = controller_policy(scope)
    assert decide([policy], "cognito-idp:DescribeUserPoolClient", POOL, {}) == ALLOW


def test_the_ingress_goes_in_after_its_secret_and_the_right_to_read_it_and_comes_out_before_them():
    alb = alb_of(**OIDC)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": access.GATEWAY_NAMESPACE}}
    items = [Item(namespace, None)] + [Item(o, None) for o in access.authentication(alb)]
    items.append(Item(access.ingress(alb, {}), None))
    staged = staging.stage(items)
    assert staging.check(staged) == []
    by_kind = {s.key.kind: s for s in staged}
    needed = {by_kind[kind].key for kind in ("Secret", "Role", "RoleBinding")}
    assert needed <= set(by_kind["Ingress"].depends_on)
    # The check holds the edges on its own: without them it names what the Ingress must wait for.
    loose = [s if s.key.kind != "Ingress" else staging.Staged(s.key, s.stage, s.name, s.manifest, ()) for s in staged]
    problems = "\n".join(staging.check(loose))
    assert f"does not wait for {key(by_kind['Secret'].manifest)} (the Secret its ALB's OIDC action reads)" in problems
    assert "lets the load balancer controller read its OIDC Secret" in problems


# --------------------------------------------------------------------- config


def raw_stack(albauth: dict[str, Any] | None = None, mode: str = "alb") -> dict[str, str]:
    kubeflow: dict[str, Any] = {
        "enabled": True,
        "adminEmail": "platform@corp.io",
        "access": {**alb_access(), "mode": mode} if mode == "alb" else {"mode": mode},
    }
    if albauth is not None:
        kubeflow["access"]["albAuth"] = albauth
    return {
        "aws:region": "us-west-2",
        f"{PROJECT}:environment": "dev",
        f"{PROJECT}:owner": "ml",
        f"{PROJECT}:network": json.dumps({"cidr": "10.20.0.0/16"}),
        f"{PROJECT}:cluster": json.dumps({"endpoint": {"public": False}}),
        f"{PROJECT}:kubeflow": json.dumps(kubeflow),
    }


def refused(albauth: dict[str, Any], mode: str = "alb") -> list[str]:
    with pytest.raises(ConfigError) as error:
        parse_config(raw_stack(albauth, mode), project=PROJECT, stack="dev")
    return [str(issue) for issue in error.value.issues]


KEY = "kubeflow.access.albAuth"
WITHOUT_TOKEN_ENDPOINT = {k: v for k, v in OIDC.items() if k != "tokenEndpoint"}


@pytest.mark.parametrize(
    ("albauth", "expected"),
    [
        (WITHOUT_TOKEN_ENDPOINT, f"{KEY}.tokenEndpoint: is required with type oidc"),
        ({"type": "cognito", "userPoolArn": POOL}, f"{KEY}.userPoolClientId: is required with type cognito"),
        (
            {**OIDC, "userPoolArn": POOL},
            f"{KEY}.userPoolArn: is a key of type cognito, not of type oidc; remove it (one type at a time)",
        ),
        (
            {**COGNITO, "issuer": OIDC["issuer"]},
            f"{KEY}.issuer: is a key of type oidc, not of type cognito; remove it (one type at a time)",
        ),
        (
            {**COGNITO, "userPoolArn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/AbC"},
            f"{KEY}.userPoolArn: expected a Cognito user pool ARN",
        ),
        (
            {**COGNITO, "userPoolArn": "arn:aws:iam::123456789012:role/x"},
            f"{KEY}.userPoolArn: expected a Cognito user pool ARN",
        ),
        (
            {**COGNITO, "userPoolDomain": "https://corp-kubeflow.auth.us-west-2.amazoncognito.com"},
            f"{KEY}.userPoolDomain: expected the Cognito domain's prefix",
        ),
        (
            {**COGNITO, "userPoolDomain": "corp-kubeflow.auth.us-west-2.amazoncognito.com"},
            f"{KEY}.userPoolDomain: expected the Cognito domain's prefix",
        ),
        ({**OIDC, "tokenEndpoint": "http://login.corp.io/token"}, f"{KEY}.tokenEndpoint: expected an https:// URL"),
        ({**OIDC, "clientSecret": "hunter2"}, f"{KEY}.clientSecret: unknown key"),
        ({**OIDC, "scopes": ["email"]}, f"{KEY}.scopes: must include 'openid' with type oidc"),
        ({**OIDC, "scopes": ["openid email"]}, f"{KEY}.scopes[0]: expected one scope without spaces"),
        ({**OIDC, "sessionTimeoutSeconds": 0}, f"{KEY}.sessionTimeoutSeconds"),
        ({**OIDC, "sessionTimeoutSeconds": 604801}, f"{KEY}.sessionTimeoutSeconds"),
        ({**OIDC, "onUnauthenticatedRequest": "redirect"}, f"{KEY}.onUnauthenticatedRequest"),
        ({"type": "saml"}, f"{KEY}.type"),
        ({k: v for k, v in COGNITO.items() if k != "type"}, f"{KEY}.type: is required"),
    ],
)
def test_each_wrong_alb_auth_input_is_a_clear_error_naming_its_key(albauth, expected):
    problems = refused(albauth)
    assert any(p.startswith(expected) for p in problems), problems


def test_every_missing_key_of_a_type_is_reported_at_once():
    problems = refused({"type": "oidc"})
    missing = {p.split(": ")[0].removeprefix(f"{KEY}.") for p in problems}
    assert missing == {
        "issuer",
        "authorizationEndpoint",
        "tokenEndpoint",
        "userInfoEndpoint",
        "clientId",
        "clientSecretKey",
    }


def test_alb_auth_without_an_alb_is_refused():
    (problem,) = refused(OIDC, mode="port-forward")
    assert problem == "kubeflow.access: albAuth only apply to mode alb; remove them"


def test_the_client_secret_must_be_set_as_a_pulumi_secret():
    raw = {**raw_stack(OIDC), f"{PROJECT}:kubeflowAlbClientSecret": "s3cret"}
    config = parse_config(raw, project=PROJECT, stack="dev")  # the named key is not an unknown setting
    assert secret_problems(config, raw, [f"{PROJECT}:kubeflowAlbClientSecret"]) == []
    (plain,) = secret_problems(config, raw, [])
    assert str(plain) == (
        f"{KEY}.clientSecretKey: names kubeflowAlbClientSecret, which is set in plain text: set it again with "
        "`pulumi config set --secret kubeflowAlbClientSecret ...`"
    )
    (missing,) = secret_problems(config, raw_stack(OIDC), [])
    assert missing.path == f"{KEY}.clientSecretKey"
    assert "which is not set" in missing.message
    with pytest.raises(ConfigError, match=rf"{KEY}\.clientSecretKey: names 'owner', a setting of the platform"):
        parse_config(raw_stack({**OIDC, "clientSecretKey": "owner"}), project=PROJECT, stack="dev")


def test_cognito_names_no_secret():
    config = parse_config(raw_stack(COGNITO), project=PROJECT, stack="dev")
    assert secret_problems(config, raw_stack(COGNITO), []) == []


# --------------------------------------------------------------------- the preview


@pytest.mark.stack
@pytest.mark.subprocess
def test_a_stack_with_oidc_on_the_alb_previews_clean_with_the_secret_readable_by_the_controller(tmp_path, capsys):
    from components.tools.preview import main

    stack_file = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())
    settings_ = stack_file["config"]
    kubeflow = settings_[f"{PROJECT}:kubeflow"]
    kubeflow["access"] = {**alb_access(), "albAuth": OIDC}
    settings_[f"{PROJECT}:kubeflowAlbClientSecret"] = {"secure": "v1:c2VjcmV0:Y2lwaGVydGV4dA=="}
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "Pulumi.albauth.yaml").write_text(yaml.safe_dump(stack_file))
    out = tmp_path / "out"
    code = main(["--stack", "albauth", "--out", str(out), "--project-dir", str(tmp_path)])
    printed = capsys.readouterr().out
    assert re.search(r"^Policies: \d+ rules, no violations$", printed, flags=re.M)
    # The model judges the gateway's allowance at the stack's own subnets: the ALB reaches the gateway, nothing else
    # is found.
    found = [line.strip() for line in printed.splitlines() if line.startswith("  [")]
    assert found == []
    assert code == 0
    assert "Y2lwaGVydGV4dA" not in (out / "resources.json").read_text()
    resources = json.loads((out / "resources.json").read_text())["resources"]
    objects = {
        (r["inputs"].get("kind"), r["inputs"]["metadata"]["name"]): r
        for r in resources
        if r["type"].startswith("kubernetes:") and isinstance(r["inputs"].get("metadata"), dict)
    }
    ingress = objects[("Ingress", "kubeflow")]
    assert ingress["inputs"]["metadata"]["annotations"][alb_auth.AUTH_TYPE] == "oidc"
    secret = objects[("Secret", alb_auth.CLIENT_SECRET_NAME)]
    # The client secret arrives as a Pulumi secret (redacted in the record), its placeholder filled.
    assert secret["inputs"]["stringData"] == {
        alb_auth.CLIENT_ID_KEY: "[secret]",
        alb_auth.CLIENT_SECRET_KEY: "[secret]",
    }
    binding = objects[("RoleBinding", alb_auth.READER)]
    assert {secret["urn"], binding["urn"]} <= set(ingress["dependencies"])
