"""Istio's say on a connection, as the Istio 1.30 docs state it (the version the pinned Kubeflow installs:
`common/istio/istio-install/base/install.yaml`, pilot 1.30.1), over endpoints the model knows.

- Sidecar injection (istio.io/v1.30/docs/setup/additional-setup/sidecar-injection/, "Controlling the injection
  policy"): the namespace label `istio-injection` (`enabled`/`disabled`) and the pod label `sidecar.istio.io/inject`
  (`"true"`/`"false"`; the pod annotation of the same name is its deprecated form, still honoured); either one
  disabled: no sidecar; else either enabled: a sidecar; neither: none (`enableNamespacesByDefault` is off). The
  injector skips host-network pods. An Istio gateway (the `proxyv2` image as the pod's own container) is an Envoy
  with the mesh identity of its service account, without a sidecar.
- Mutual TLS (docs/reference/config/security/peer_authentication/, docs/concepts/security/#peer-authentication): a
  PeerAuthentication in the root namespace (meshConfig `rootNamespace`, `istio-system`) sets the mesh's mode, one
  in a namespace without a selector that namespace's, one with a selector its workloads' and, per port, its
  `portLevelMtls`; the narrowest wins, `UNSET` inherits, and the mesh's default is `PERMISSIVE`. `STRICT` refuses
  plaintext, so a source without an Envoy (Prometheus) cannot reach a STRICT port. A source with an Envoy sends mTLS
  to a destination that has one (auto mTLS), plaintext to one that has not, or to a port whose mode is `DISABLE`.
- AuthorizationPolicy (docs/reference/config/security/authorization-policy/): a policy in the root namespace applies
  to every workload, one in a namespace to its workloads its `selector` picks (all without one). CUSTOM policies
  are evaluated first, then DENY, then ALLOW: a matching CUSTOM policy defers to its provider, a matching DENY
  policy denies, no ALLOW policy selecting the workload allows, a matching ALLOW policy allows, and anything else
  is denied. A policy with no rules matches nothing (an ALLOW one: deny all, the `allow-nothing` example); a rule
  `{}` matches everything. `source.principals`/`namespaces` (and `source.principal`/`source.namespace` in `when`)
  only match mTLS traffic: plaintext has no peer identity. String values match exactly, by prefix (`abc*`),
  suffix (`*abc`), or presence (`*`). On plain TCP an ALLOW rule with HTTP-only fields matches nothing, and in a
  DENY or CUSTOM rule those fields are dropped (docs/ops/configuration/security/security-policy-examples/ and the
  reference's "Authorization Policy for TCP workloads").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address, ip_network
from typing import Any

from ...kubeflow.objects import matches

#: The namespace whose policies apply mesh-wide (the pinned mesh config's `rootNamespace`).
ROOT_NAMESPACE = "istio-system"
INJECTION_LABEL = "istio-injection"
INJECT = "sidecar.istio.io/inject"
DEFAULT_MODE = "PERMISSIVE"
#: Inbound ports left to the application, not redirected to the sidecar (istio.io/v1.30/docs/reference/config/
#: annotations/): no policy of Istio's sees them.
EXCLUDE_INBOUND = "traffic.sidecar.istio.io/excludeInboundPorts"
#: Ports the proxy serves itself, outside the inbound chain policies apply to: 15020 merged metrics, 15021 health,
#: 15090 Envoy's Prometheus telemetry (istio.io/v1.30/docs/ops/deployment/application-requirements/, "Ports used
#: by Istio").
PROXY_PORTS = frozenset({15020, 15021, 15090})
#: Request fields only HTTP (and gRPC) traffic carries.
_HTTP_SOURCE = ("requestPrincipals", "notRequestPrincipals")
_HTTP_OPERATION = ("hosts", "notHosts", "methods", "notMethods", "paths", "notPaths")


@dataclass(frozen=True)
class Mesh:
    """An endpoint's place in the mesh: whether an Envoy fronts it (a sidecar, or a gateway that is one) and the
    service account whose identity its Envoy presents."""

    sidecar: bool = False
    gateway: bool = False
    service_account: str = "default"
    #: Inbound ports the sidecar does not capture (`traffic.sidecar.istio.io/excludeInboundPorts`).
    excluded_ports: frozenset[int] = frozenset()

    @property
    def proxied(self) -> bool:
        return self.sidecar or self.gateway


OUTSIDE_MESH = Mesh()


def injected(template: Mapping[str, Any], namespace_labels: Mapping[str, str]) -> bool:
    """Whether Istio's injector gives pods of this template a sidecar in a namespace with these labels."""
    metadata = template.get("metadata") or {}
    if (template.get("spec") or {}).get("hostNetwork"):
        return False
    pod = (metadata.get("labels") or {}).get(INJECT) or (metadata.get("annotations") or {}).get(INJECT)
    namespace = namespace_labels.get(INJECTION_LABEL)
    if pod == "false" or namespace == "disabled":
        return False
    return pod == "true" or namespace == "enabled"


def mesh_of(template: Mapping[str, Any], namespace_labels: Mapping[str, str]) -> Mesh:
    spec = template.get("spec") or {}
    images = [str(c.get("image", "")) for c in spec.get("containers") or ()]
    account = spec.get("serviceAccountName") or "default"
    sidecar = injected(template, namespace_labels)
    gateway = not sidecar and any("/proxyv2:" in i or i.endswith("/proxyv2") for i in images)
    excluded = ((template.get("metadata") or {}).get("annotations") or {}).get(EXCLUDE_INBOUND, "")
    return Mesh(sidecar, gateway, account, frozenset(int(p) for p in excluded.split(",") if p.strip().isdigit()))


@dataclass(frozen=True)
class Request:
    """What a connection carries that policies may look at: nothing but its port on plain TCP (`http` false); on
    HTTP or gRPC its method, path, headers and JWT principal (`request_principal`, from a RequestAuthentication)."""

    http: bool = False
    method: str = "GET"
    path: str = "/"
    headers: Mapping[str, str] = field(default_factory=dict)
    request_principal: str | None = None
    #: CUSTOM providers (meshConfig `extensionProviders`) that admit this request (a signed-in user's session).
    admitted_by: frozenset[str] = frozenset()


TCP = Request()


@dataclass(frozen=True)
class Side:
    """One end of a connection as Istio sees it."""

    namespace: str | None
    labels: Mapping[str, str]
    address: str
    mesh: Mesh = OUTSIDE_MESH


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    #: The policy that decides a denial (`kind namespace/name`) and why.
    reason: str = ""


OPEN = Verdict(True)


def value_matches(pattern: str, value: str | None) -> bool:
    """Istio's string match: exact, `prefix*`, `*suffix`, or `*` (present)."""
    if value is None or value == "":
        return False
    if pattern == "*":
        return True
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    return value == pattern


def _any(patterns: Iterable[str], value: str | None) -> bool:
    return any(value_matches(p, value) for p in patterns)


def _in_blocks(blocks: Iterable[str], address: str) -> bool:
    return any(ip_address(address) in ip_network(b, strict=False) for b in blocks)


@dataclass(frozen=True)
class _Call:
    source: Side
    destination: Side
    port: int
    request: Request
    #: The source's identity when the connection is mTLS; None for plaintext.
    principal: str | None


def _field(values: Mapping[str, Any], name: str, actual: str | None, *, ip: bool = False) -> bool:
    """A positive field (`name`) and its negative (`notName`) as Istio ANDs them; absent: no constraint."""
    negative = "not" + name[0].upper() + name[1:]
    if ip:
        ok = name not in values or (actual is not None and _in_blocks(values[name], actual))
        return ok and not (negative in values and actual is not None and _in_blocks(values[negative], actual))
    ok = name not in values or _any(values[name], actual)
    return ok and not (negative in values and _any(values[negative], actual))


def _source_matches(source: Mapping[str, Any], call: _Call, http_fields: bool) -> bool:
    namespace = call.source.namespace if call.principal else None
    checks = [
        _field(source, "principals", call.principal),
        _field(source, "namespaces", namespace),
        _field(source, "ipBlocks", call.source.address, ip=True),
        _field(source, "remoteIpBlocks", call.source.address, ip=True),
    ]
    if http_fields:
        checks.append(_field(source, "requestPrincipals", call.request.request_principal))
    return all(checks)


def _operation_matches(operation: Mapping[str, Any], call: _Call, http_fields: bool) -> bool:
    checks = [_field(operation, "ports", str(call.port))]
    if http_fields:
        checks += [
            _field(operation, "methods", call.request.method),
            _field(operation, "paths", call.request.path),
            _field(operation, "hosts", call.request.headers.get(":authority")),
        ]
    return all(checks)


def _attribute(key: str, call: _Call) -> tuple[bool, str | None]:
    """A `when` key's value for this call: (known, value)."""
    mtls = call.principal is not None
    simple = {
        "source.principal": call.principal,
        "source.namespace": call.source.namespace if mtls else None,
        "source.ip": call.source.address,
        "remote.ip": call.source.address,
        "destination.port": str(call.port),
        "request.auth.principal": call.request.request_principal,
    }
    if key in simple:
        return True, simple[key]
    if key.startswith("request.headers[") and key.endswith("]"):
        return True, call.request.headers.get(key[len("request.headers[") : -1].lower())
    return False, None


def _condition_matches(condition: Mapping[str, Any], call: _Call) -> bool | None:
    known, value = _attribute(condition["key"], call)
    if not known:
        return None
    if condition["key"] in ("source.ip", "remote.ip"):
        return _field(condition, "values", value, ip=True)
    return _field(condition, "values", value)


def _is_http_only(rule: Mapping[str, Any]) -> bool:
    sources = [f.get("source") or {} for f in rule.get("from") or ()]
    operations = [t.get("operation") or {} for t in rule.get("to") or ()]
    conditions = [c["key"] for c in rule.get("when") or ()]
    return (
        any(k in s for s in sources for k in _HTTP_SOURCE)
        or any(k in o for o in operations for k in _HTTP_OPERATION)
        or any(k.startswith("request.") for k in conditions)
    )


def rule_matches(rule: Mapping[str, Any], call: _Call, action: str) -> bool:
    """Whether one rule matches: any of its `from`, any of its `to`, and all of its `when`. A condition on a key
    the model does not know matches for DENY and CUSTOM and not for ALLOW, so doubt shows up as a denial."""
    http = call.request.http
    if not http and action == "ALLOW" and _is_http_only(rule):
        return False
    sources = rule.get("from") or ()
    if sources and not any(_source_matches(f.get("source") or {}, call, http) for f in sources):
        return False
    operations = rule.get("to") or ()
    if operations and not any(_operation_matches(t.get("operation") or {}, call, http) for t in operations):
        return False
    for condition in rule.get("when") or ():
        if condition["key"].startswith("request.") and not http:
            continue  # dropped on TCP (an ALLOW rule with it was refused above)
        verdict = _condition_matches(condition, call)
        if verdict is None:
            verdict = action != "ALLOW"
        if not verdict:
            return False
    return True


def _name(policy: Mapping[str, Any]) -> str:
    meta = policy["metadata"]
    return f"{policy['kind']} {meta.get('namespace')}/{meta['name']}"


def _applies(policy: Mapping[str, Any], destination: Side) -> bool:
    namespace = policy["metadata"].get("namespace")
    if namespace not in (ROOT_NAMESPACE, destination.namespace):
        return False
    spec = policy.get("spec") or {}
    if "targetRef" in spec or "targetRefs" in spec:
        return False  # Gateway API targets (waypoints, Gateways): not sidecars
    return matches(spec.get("selector"), destination.labels)


class Policies:
    """The mesh's PeerAuthentications and AuthorizationPolicies, judging calls between endpoints."""

    def __init__(self, objects: Iterable[Mapping[str, Any]]):
        listed = list(objects)
        self.peer = [o for o in listed if o.get("kind") == "PeerAuthentication"]
        self.authz = [o for o in listed if o.get("kind") == "AuthorizationPolicy"]

    def mtls_mode(self, destination: Side, port: int) -> tuple[str, str | None]:
        """The destination port's mTLS mode and the PeerAuthentication that sets it (None: the mesh's default)."""
        layers: list[tuple[str | None, Mapping[str, Any]]] = []
        for policy in self.peer:
            namespace, spec = policy["metadata"].get("namespace"), policy.get("spec") or {}
            selector = spec.get("selector")
            if namespace == destination.namespace and selector and matches(selector, destination.labels):
                level = (spec.get("portLevelMtls") or {}).get(str(port)) or (spec.get("portLevelMtls") or {}).get(port)
                layers += [(level.get("mode"), policy)] if level else []
                layers.append(((spec.get("mtls") or {}).get("mode"), policy))
        for wanted in (destination.namespace, ROOT_NAMESPACE):
            for policy in self.peer:
                spec = policy.get("spec") or {}
                if policy["metadata"].get("namespace") == wanted and not spec.get("selector"):
                    layers.append(((spec.get("mtls") or {}).get("mode"), policy))
        for mode, policy in layers:
            if mode and mode != "UNSET":
                return mode, _name(policy)
        return DEFAULT_MODE, None

    def decide(self, source: Side, destination: Side, port: int, request: Request = TCP) -> Verdict:
        """Whether Istio lets `source` reach `destination` on `port` with `request`; only a destination with an
        Envoy of its own enforces anything."""
        if not destination.mesh.proxied or port in destination.mesh.excluded_ports or port in PROXY_PORTS:
            return OPEN
        mode, setter = self.mtls_mode(destination, port) if destination.mesh.sidecar else (DEFAULT_MODE, None)
        # A gateway's listeners take what clients send, not the mesh's mTLS: only a sidecar terminates it.
        mtls = source.mesh.proxied and destination.mesh.sidecar and mode != "DISABLE"
        if mode == "STRICT" and not mtls:
            by = setter or "the mesh's default"
            return Verdict(False, f"{by} requires mTLS on port {port}, and the source has no Envoy to send it")
        principal = f"cluster.local/ns/{source.namespace}/sa/{source.mesh.service_account}" if mtls else None
        return self._authorize(_Call(source, destination, port, request, principal))

    def _authorize(self, call: _Call) -> Verdict:
        applying = [p for p in self.authz if _applies(p, call.destination)]

        def matching(action: str) -> list[Mapping[str, Any]]:
            chosen = [p for p in applying if ((p.get("spec") or {}).get("action") or "ALLOW") == action]
            return [p for p in chosen if any(rule_matches(r, call, action) for r in _rules(p))]

        for policy in matching("CUSTOM"):
            provider = ((policy.get("spec") or {}).get("provider") or {}).get("name", "")
            if provider not in call.request.admitted_by:
                return Verdict(False, f"{_name(policy)} sends it to {provider!r}, which does not admit it")
        if denied := matching("DENY"):
            return Verdict(False, f"{_name(denied[0])} denies it")
        allows = [p for p in applying if ((p.get("spec") or {}).get("action") or "ALLOW") == "ALLOW"]
        if not allows or matching("ALLOW"):
            return OPEN
        names = ", ".join(sorted(_name(p) for p in allows))
        return Verdict(False, f"no rule of the ALLOW policies that select it matches ({names})")


def _rules(policy: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return (policy.get("spec") or {}).get("rules") or ()
