"""The model's Istio evaluator (`components.tools.cluster_model.istio`) on the examples of the Istio 1.30 docs: the
AuthorizationPolicy and PeerAuthentication reference pages, the authorization tasks (allow-nothing, deny, TCP,
external authorization) and the sidecar injection page. Each case is the docs' own setup with the outcome they
state."""

from __future__ import annotations

from typing import Any

import pytest

from components.tools.cluster_model.istio import TCP, Mesh, Policies, Request, Side, injected, mesh_of

SLEEP = Side("foo", {"app": "sleep"}, "10.0.0.5", Mesh(sidecar=True, service_account="sleep"))
SLEEP_DEFAULT_NS = Side("default", {"app": "sleep"}, "10.0.0.6", Mesh(sidecar=True, service_account="sleep"))
SLEEP_TEST_NS = Side("test", {"app": "sleep"}, "10.0.0.7", Mesh(sidecar=True, service_account="sleep"))
PLAIN_TEST_NS = Side("test", {"app": "sleep"}, "10.0.0.8")  # the same pod without a sidecar: plaintext
HTTPBIN = Side("foo", {"app": "httpbin"}, "10.0.1.5", Mesh(sidecar=True, service_account="httpbin"))
FINANCE = Side("foo", {"app": "finance"}, "10.0.1.6", Mesh(sidecar=True))
NO_SIDECAR = Side("legacy", {"app": "httpbin"}, "10.0.2.5")


def authz(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "AuthorizationPolicy", "metadata": {"namespace": namespace, "name": name}, "spec": spec}


def peer(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PeerAuthentication", "metadata": {"namespace": namespace, "name": name}, "spec": spec}


def get(path: str = "/", **headers: str) -> Request:
    return Request(http=True, method="GET", path=path, headers=headers)


#: The reference page's first example: ALLOW from the `sleep` service account of `default` or from namespace
#: `test`, GET on `/info*` or POST on `/data`.
HTTPBIN_POLICY = authz(
    "foo",
    "httpbin",
    {
        "action": "ALLOW",
        "rules": [
            {
                "from": [
                    {"source": {"principals": ["cluster.local/ns/default/sa/sleep"]}},
                    {"source": {"namespaces": ["test"]}},
                ],
                "to": [
                    {"operation": {"methods": ["GET"], "paths": ["/info*"]}},
                    {"operation": {"methods": ["POST"], "paths": ["/data"]}},
                ],
            }
        ],
    },
)


def test_a_workload_no_policy_selects_takes_everything():
    assert Policies([]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, get()).allowed


def test_the_reference_example_allows_the_named_principal_and_namespace_on_the_named_operations():
    policies = Policies([HTTPBIN_POLICY])
    assert policies.decide(SLEEP_DEFAULT_NS, HTTPBIN, 8000, get("/info/x")).allowed
    assert policies.decide(SLEEP_TEST_NS, HTTPBIN, 8000, get("/info")).allowed
    assert not policies.decide(SLEEP_DEFAULT_NS, HTTPBIN, 8000, get("/ip")).allowed
    assert not policies.decide(SLEEP, HTTPBIN, 8000, get("/info")).allowed  # namespace foo: neither source


def test_principals_and_namespaces_match_only_mtls_so_a_source_without_a_sidecar_is_denied():
    verdict = Policies([HTTPBIN_POLICY]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, get("/info"))
    assert not verdict.allowed
    assert "AuthorizationPolicy foo/httpbin" in verdict.reason


def test_allow_nothing_denies_every_request_to_the_namespaces_workloads():
    verdict = Policies([authz("foo", "allow-nothing", {})]).decide(SLEEP, HTTPBIN, 8000, get())
    assert not verdict.allowed
    assert "foo/allow-nothing" in verdict.reason
    assert Policies([authz("foo", "allow-nothing", {})]).decide(SLEEP, NO_SIDECAR, 8000, get()).allowed


def test_a_policy_in_the_root_namespace_applies_to_every_namespace():
    deny_all = authz("istio-system", "global-deny-all", {})
    assert not Policies([deny_all]).decide(SLEEP, HTTPBIN, 8000, get()).allowed
    assert Policies([authz("bar", "allow-nothing", {})]).decide(SLEEP, HTTPBIN, 8000, get()).allowed


def test_allow_all_opens_what_a_root_deny_all_closes():
    policies = [authz("istio-system", "global-deny-all", {}), authz("foo", "allow-all", {"rules": [{}]})]
    assert Policies(policies).decide(PLAIN_TEST_NS, HTTPBIN, 8000, TCP).allowed


def test_deny_is_evaluated_before_allow():
    """The deny task: DENY GET from anyone, while an ALLOW policy allows everything."""
    deny_get = authz(
        "foo", "deny-method-get", {"action": "DENY", "rules": [{"to": [{"operation": {"methods": ["GET"]}}]}]}
    )
    policies = Policies([deny_get, authz("foo", "allow-all", {"rules": [{}]})])
    verdict = policies.decide(SLEEP, HTTPBIN, 8000, get("/get"))
    assert not verdict.allowed
    assert "deny-method-get" in verdict.reason
    assert policies.decide(SLEEP, HTTPBIN, 8000, Request(http=True, method="POST", path="/post")).allowed


def test_a_header_condition_with_not_values_star_matches_only_requests_without_the_header():
    policy = authz("foo", "no-user", {"rules": [{"when": [{"key": "request.headers[x-user]", "notValues": ["*"]}]}]})
    assert Policies([policy]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, get()).allowed
    assert not Policies([policy]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, get(**{"x-user": "a"})).allowed


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [("/info*", "/info/x", True), ("*/api/kernels", "/notebook/a/b/api/kernels", True), ("/data", "/data/x", False)],
)
def test_paths_match_exactly_by_prefix_or_by_suffix(pattern, path, expected):
    policy = authz("foo", "p", {"rules": [{"to": [{"operation": {"paths": [pattern]}}]}]})
    assert Policies([policy]).decide(SLEEP, HTTPBIN, 8000, get(path)).allowed is expected


def test_on_tcp_an_allow_rule_with_http_fields_matches_nothing_and_a_deny_rule_drops_them():
    """The TCP task: an ALLOW with `methods` on a TCP port denies it; a DENY with `methods` and `ports` denies the
    port's TCP traffic whatever the method."""
    allow_get = authz(
        "foo", "tcp-policy", {"rules": [{"to": [{"operation": {"methods": ["GET"], "ports": ["9000"]}}]}]}
    )
    assert not Policies([allow_get]).decide(SLEEP, HTTPBIN, 9000, TCP).allowed
    deny_get = authz(
        "foo",
        "tcp-deny",
        {"action": "DENY", "rules": [{"to": [{"operation": {"methods": ["GET"], "ports": ["9000"]}}]}]},
    )
    assert not Policies([deny_get]).decide(SLEEP, HTTPBIN, 9000, TCP).allowed
    assert Policies([deny_get]).decide(SLEEP, HTTPBIN, 9001, TCP).allowed


def test_custom_defers_to_its_provider_before_allow():
    """The external authorization task: requests to /headers go to the `sample-ext-authz-grpc` provider."""
    ext = authz(
        "foo",
        "ext-authz",
        {
            "action": "CUSTOM",
            "provider": {"name": "sample-ext-authz-grpc"},
            "rules": [{"to": [{"operation": {"paths": ["/headers"]}}]}],
        },
    )
    verdict = Policies([ext]).decide(SLEEP, HTTPBIN, 8000, get("/headers"))
    assert not verdict.allowed
    assert "sample-ext-authz-grpc" in verdict.reason
    admitted = Request(http=True, path="/headers", admitted_by=frozenset({"sample-ext-authz-grpc"}))
    assert Policies([ext]).decide(SLEEP, HTTPBIN, 8000, admitted).allowed
    assert Policies([ext]).decide(SLEEP, HTTPBIN, 8000, get("/ip")).allowed


def test_strict_mtls_refuses_a_source_without_an_envoy_and_permissive_is_the_default():
    strict = peer("foo", "default", {"mtls": {"mode": "STRICT"}})
    verdict = Policies([strict]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, TCP)
    assert not verdict.allowed
    assert "PeerAuthentication foo/default" in verdict.reason
    assert Policies([strict]).decide(SLEEP_TEST_NS, HTTPBIN, 8000, TCP).allowed
    assert Policies([]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, TCP).allowed


def test_the_narrowest_peer_authentication_wins_down_to_the_port():
    """The reference's examples: mesh-wide STRICT in the root namespace; `finance` STRICT but port 8080 DISABLE;
    a workload policy PERMISSIVE overriding its namespace's STRICT."""
    mesh = peer("istio-system", "default", {"mtls": {"mode": "STRICT"}})
    finance = peer(
        "foo",
        "finance",
        {
            "selector": {"matchLabels": {"app": "finance"}},
            "mtls": {"mode": "STRICT"},
            "portLevelMtls": {8080: {"mode": "DISABLE"}},
        },
    )
    assert not Policies([mesh]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, TCP).allowed
    assert Policies([mesh, finance]).decide(PLAIN_TEST_NS, FINANCE, 8080, TCP).allowed
    assert not Policies([mesh, finance]).decide(PLAIN_TEST_NS, FINANCE, 8000, TCP).allowed
    relaxed = peer("foo", "httpbin", {"selector": {"matchLabels": {"app": "httpbin"}}, "mtls": {"mode": "PERMISSIVE"}})
    namespace_strict = peer("foo", "default", {"mtls": {"mode": "STRICT"}})
    assert Policies([namespace_strict, relaxed]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, TCP).allowed
    unset = peer("foo", "httpbin", {"selector": {"matchLabels": {"app": "httpbin"}}, "mtls": {"mode": "UNSET"}})
    assert not Policies([namespace_strict, unset]).decide(PLAIN_TEST_NS, HTTPBIN, 8000, TCP).allowed


@pytest.mark.parametrize(
    ("namespace", "pod_label", "annotation", "host_network", "expected"),
    [
        ("enabled", None, None, False, True),
        ("enabled", "false", None, False, False),  # either one disabled: no sidecar
        ("disabled", "true", None, False, False),
        (None, "true", None, False, True),  # either one enabled: a sidecar
        (None, None, None, False, False),  # neither: none by default
        ("enabled", None, "false", False, False),  # the deprecated annotation still counts
        ("enabled", None, None, True, False),  # host-network pods are never injected
    ],
)
def test_sidecar_injection_follows_the_namespace_and_pod_labels(
    namespace, pod_label, annotation, host_network, expected
):
    metadata: dict[str, Any] = {"labels": {"sidecar.istio.io/inject": pod_label} if pod_label else {}}
    if annotation:
        metadata["annotations"] = {"sidecar.istio.io/inject": annotation}
    template = {"metadata": metadata, "spec": {"hostNetwork": host_network, "containers": []}}
    labels = {"istio-injection": namespace} if namespace else {}
    assert injected(template, labels) is expected


def test_ports_the_sidecar_does_not_capture_and_the_proxys_own_ports_are_outside_every_policy():
    """The annotations reference (`traffic.sidecar.istio.io/excludeInboundPorts`) and "Ports used by Istio"
    (15090, Envoy's Prometheus telemetry): a mesh-wide allow-nothing does not reach them."""
    template = {"metadata": {"annotations": {"traffic.sidecar.istio.io/excludeInboundPorts": "9443"}}, "spec": {}}
    webhook = Side("foo", {"app": "webhook"}, "10.0.3.5", mesh_of(template, {"istio-injection": "enabled"}))
    deny_all = Policies([authz("istio-system", "global-deny-all", {})])
    assert deny_all.decide(NO_SIDECAR, webhook, 9443, TCP).allowed
    assert not deny_all.decide(NO_SIDECAR, webhook, 8080, TCP).allowed
    assert deny_all.decide(NO_SIDECAR, HTTPBIN, 15090, TCP).allowed
