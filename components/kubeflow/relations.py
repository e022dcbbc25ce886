"""What each Kubeflow object must wait for besides its stage's gates: its namespace, its CRD, the fail-closed
webhooks that see its creation, the Service and workload behind a webhook, the Certificates a workload mounts, a
Certificate's Issuer, a team namespace, the Secret (and the RBAC to read it) of an Ingress's ALB authentication.
`staging` adds these as edges and checks them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..certmanager.names import GROUPS as CERT_MANAGER_GROUPS
from .alb_auth import IDP_OIDC
from .objects import (
    MONITORING_GROUP,
    NAME_LABEL,
    Manifest,
    ObjectKey,
    Scopes,
    group_of,
    is_builtin,
    is_crd,
    is_webhook_configuration,
    is_workload,
    key,
    matches,
    namespace_labels,
    pod_template,
)

CERT_MANAGER_GROUP = "cert-manager.io"
#: The API groups the platform serves from releases of its own, outside Kubeflow's objects.
PLATFORM_GROUPS = CERT_MANAGER_GROUPS | {MONITORING_GROUP}


def is_custom(obj: Mapping[str, Any]) -> bool:
    return not is_builtin(obj)


class Relations:
    """The object-to-object requirements of a set of objects (what `edges` adds and `check` verifies)."""

    def __init__(self, objects: Sequence[Manifest]):
        self.objects = {key(o): o for o in objects}
        self.scopes = Scopes(list(objects))
        self.crds = {(o["spec"]["group"], o["spec"]["names"]["kind"]): key(o) for o in objects if is_crd(o)}
        self.namespaces = {
            o["metadata"]["name"]: key(o) for o in objects if o["kind"] == "Namespace" and o["apiVersion"] == "v1"
        }
        self.namespace_labels = namespace_labels(objects)
        self.webhooks = [o for o in objects if is_webhook_configuration(o)]
        self.workloads = [o for o in objects if is_workload(o)]
        self.certificates = {
            (o["metadata"]["namespace"], o["spec"]["secretName"]): key(o)
            for o in objects
            if group_of(o["apiVersion"]) == CERT_MANAGER_GROUP and o["kind"] == "Certificate"
        }

    def crd_of(self, obj: Manifest) -> ObjectKey | None:
        return self.crds.get((group_of(obj["apiVersion"]), obj["kind"]))

    def namespace_of(self, obj: Manifest) -> ObjectKey | None:
        return self.namespaces.get(obj["metadata"].get("namespace", ""))

    def _labels_of_namespace(self, name: str) -> dict[str, str]:
        return self.namespace_labels.get(name, {NAME_LABEL: name})

    def intercepts(self, webhook_configuration: Manifest, obj: Manifest) -> bool:
        """Whether a fail-closed webhook of this configuration sees the creation of `obj`."""
        group, kind = group_of(obj["apiVersion"]), obj["kind"]
        if not self.scopes.known(group, kind):
            return False
        resource = self.scopes.resource(group, kind)
        version = obj["apiVersion"].split("/")[-1]
        namespaced = self.scopes.namespaced(group, kind)
        labels = obj["metadata"].get("labels") or {}
        if kind == "Namespace":  # a Namespace is matched by its own labels
            selected_by = {**labels, NAME_LABEL: obj["metadata"]["name"]}
        else:
            selected_by = self._labels_of_namespace(obj["metadata"].get("namespace", ""))
        for webhook in webhook_configuration.get("webhooks") or ():
            if webhook.get("failurePolicy", "Fail") != "Fail":
                continue
            if not matches(webhook.get("objectSelector"), labels):
                continue
            # Other cluster-scoped objects are never skipped by a namespaceSelector.
            if (namespaced or kind == "Namespace") and not matches(webhook.get("namespaceSelector"), selected_by):
                continue
            for rule in webhook.get("rules") or ():
                if _rule_matches(rule, group, version, resource, namespaced):
                    return True
        return False

    def webhook_backends(self, webhook_configuration: Manifest) -> set[ObjectKey]:
        """The Services a webhook configuration calls, and the workloads behind them."""
        found: set[ObjectKey] = set()
        for webhook in webhook_configuration.get("webhooks") or ():
            service = webhook.get("clientConfig", {}).get("service")
            if not service:
                continue
            service_key = ObjectKey("", "Service", service["namespace"], service["name"])
            if service_key not in self.objects:
                continue
            found.add(service_key)
            selector = self.objects[service_key].get("spec", {}).get("selector") or {}
            for workload in self.workloads:
                if workload["metadata"]["namespace"] != service["namespace"] or not selector:
                    continue
                template_labels = (pod_template(workload) or {}).get("metadata", {}).get("labels") or {}
                if all(template_labels.get(k) == v for k, v in selector.items()):
                    found.add(key(workload))
        return found

    def mounted_certificates(self, obj: Manifest) -> set[ObjectKey]:
        template = pod_template(obj)
        if template is None:
            return set()
        namespace = obj["metadata"].get("namespace", "")
        names = {v["secret"]["secretName"] for v in template.get("spec", {}).get("volumes") or () if "secret" in v}
        return {self.certificates[(namespace, n)] for n in names if (namespace, n) in self.certificates}

    def pod_prerequisites(self, obj: Manifest) -> dict[ObjectKey, str]:
        """What a workload's pods need to exist before they can start: the ServiceAccount they run as (the API
        server refuses a pod whose ServiceAccount does not exist, and the controller only retries with a backoff),
        the ConfigMaps and Secrets they mount or read without `optional` (the kubelet holds the pod until they
        exist), and the claims they mount (on destroy the workload then goes first: a claim's protection finalizer
        holds its delete until no pod mounts it). Without the edge the engine may create the workload first and
        wait for its readiness with every slot of its parallelism while these wait behind it (found by the engine
        tier at `--parallel` 8)."""
        template = pod_template(obj)
        if template is None:
            return {}
        namespace = obj["metadata"].get("namespace", "")
        spec = template.get("spec") or {}
        wanted: dict[ObjectKey, str] = {}
        account = spec.get("serviceAccountName") or spec.get("serviceAccount")
        if account:
            wanted[ObjectKey("", "ServiceAccount", namespace, account)] = "the ServiceAccount its pods run as"
        for volume in spec.get("volumes") or ():
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                wanted[ObjectKey("", "PersistentVolumeClaim", namespace, claim)] = "the claim its pods mount"
            for kind, source, name_key in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
                ref = volume.get(source)
                if ref and not ref.get("optional") and ref.get(name_key):
                    wanted[ObjectKey("", kind, namespace, ref[name_key])] = f"the {kind} its pods mount"
        for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
            sources = [
                *((s, "configMapRef", "secretRef") for s in container.get("envFrom") or ()),
                *(((v.get("valueFrom") or {}), "configMapKeyRef", "secretKeyRef") for v in container.get("env") or ()),
            ]
            for source, config_map, secret in sources:
                for kind, field in (("ConfigMap", config_map), ("Secret", secret)):
                    ref = source.get(field)
                    if ref and not ref.get("optional") and ref.get("name"):
                        wanted[ObjectKey("", kind, namespace, ref["name"])] = f"the {kind} its pods read"
        return {k: why for k, why in wanted.items() if k in self.objects}

    def issuer_of(self, obj: Manifest) -> ObjectKey | None:
        if group_of(obj["apiVersion"]) != CERT_MANAGER_GROUP or obj["kind"] != "Certificate":
            return None
        ref = obj["spec"].get("issuerRef") or {}
        if ref.get("kind", "Issuer") == "ClusterIssuer":
            candidate = ObjectKey(CERT_MANAGER_GROUP, "ClusterIssuer", "", ref["name"])
        else:
            candidate = ObjectKey(CERT_MANAGER_GROUP, "Issuer", obj["metadata"]["namespace"], ref["name"])
        return candidate if candidate in self.objects else None

    def static_volumes(self, obj: Manifest) -> dict[ObjectKey, str]:
        """The static PersistentVolumes a claim binds, and those a namespace's claims bind: on destroy the
        namespace (and the claim with it) goes first, then the volume nobody binds."""
        if obj["kind"] == "PersistentVolumeClaim" and obj["apiVersion"] == "v1":
            name = (obj.get("spec") or {}).get("volumeName")
            volume = ObjectKey("", "PersistentVolume", "", name) if name else None
            return {volume: "the static volume it binds"} if volume in self.objects else {}
        if obj["kind"] == "Namespace" and obj["apiVersion"] == "v1":
            return {
                key(v): "the static volume a claim in it binds"
                for v in self.objects.values()
                if v["kind"] == "PersistentVolume"
                and ((v.get("spec") or {}).get("claimRef") or {}).get("namespace") == obj["metadata"]["name"]
            }
        return {}

    def authentication_reads(self, obj: Manifest) -> dict[ObjectKey, str]:
        """For an Ingress whose ALB authenticates with OIDC: the client's Secret, and the Roles and RoleBindings in
        its namespace that let a subject read it. The controller reads the Secret while it builds the ALB (no
        Secret, or no right to read it, and the Ingress stays without a load balancer); on destroy the Ingress goes
        first, while the controller can still read what it needs to reconcile."""
        if obj["kind"] != "Ingress":
            return {}
        raw = (obj["metadata"].get("annotations") or {}).get(IDP_OIDC)
        if raw is None:
            return {}
        namespace, name = obj["metadata"].get("namespace", ""), json.loads(raw).get("secretName")
        secret = ObjectKey("", "Secret", namespace, name)
        needs = {secret: "the Secret its ALB's OIDC action reads"} if secret in self.objects else {}
        for role in self.objects.values():
            if role["kind"] != "Role" or role["metadata"].get("namespace") != namespace:
                continue
            if not any(_reads_secret(rule, name) for rule in role.get("rules") or ()):
                continue
            for binding in self.objects.values():
                ref = binding.get("roleRef") or {}
                if (
                    binding["kind"] == "RoleBinding"
                    and binding["metadata"].get("namespace") == namespace
                    and (ref.get("kind"), ref.get("name")) == ("Role", role["metadata"]["name"])
                ):
                    needs[key(role)] = "the Role that lets the load balancer controller read its OIDC Secret"
                    needs[key(binding)] = "the binding that lets the load balancer controller read its OIDC Secret"
        return needs

    def required(self, obj: Manifest, stages: Mapping[ObjectKey, int]) -> dict[ObjectKey, str]:
        """What `obj` must depend on (directly or through others), each with the reason."""
        own = key(obj)
        needs: dict[ObjectKey, str] = {}
        namespace = self.namespace_of(obj)
        if namespace is not None and namespace != own:
            needs[namespace] = "its namespace"
        if is_custom(obj) and group_of(obj["apiVersion"]) not in PLATFORM_GROUPS:
            # (The platform's cert-manager and kube-prometheus-stack serve their groups: registration makes those
            # objects depend on them.)
            crd = self.crd_of(obj)
            if crd is None:
                kind = f"{obj['kind']}.{group_of(obj['apiVersion'])}"
                raise ValueError(f"{own}: no CustomResourceDefinition for {kind} among the objects")
            needs[crd] = "its CRD"
        for webhook in self.webhooks:
            # Only a webhook that exists when the object is created can reject it.
            if key(webhook) != own and stages[key(webhook)] <= stages[own] and self.intercepts(webhook, obj):
                needs[key(webhook)] = "a fail-closed webhook intercepting its creation"
        if is_webhook_configuration(obj):
            for backend in self.webhook_backends(obj):
                needs[backend] = "the service behind its webhooks"
        for certificate in self.mounted_certificates(obj):
            needs[certificate] = "the Certificate whose Secret it mounts"
        for needed, why in self.pod_prerequisites(obj).items():
            # Dependencies only point back to the same or an earlier stage; none of Kubeflow's workloads uses an
            # object of a later one (a team's, which its own namespace's objects reach through the team stage).
            if stages.get(needed, 0) <= stages[own]:
                needs[needed] = why
        issuer = self.issuer_of(obj)
        if issuer is not None:
            needs[issuer] = "its Issuer"
        for volume, why in self.static_volumes(obj).items():
            needs[volume] = why
        for needed, why in self.authentication_reads(obj).items():
            needs[needed] = why
        if obj["kind"] == "Profile" and group_of(obj["apiVersion"]) == "kubeflow.org":
            team_namespace = self.namespaces.get(obj["metadata"]["name"])
            if team_namespace is not None:
                needs[team_namespace] = "the team namespace it adopts"
        return needs


def _reads_secret(rule: Mapping[str, Any], name: str) -> bool:
    names = rule.get("resourceNames") or [name]
    return (
        "" in (rule.get("apiGroups") or ())
        and "secrets" in (rule.get("resources") or ())
        and "get" in (rule.get("verbs") or ())
        and name in names
    )


def _rule_matches(rule: Mapping[str, Any], group: str, version: str, resource: str, namespaced: bool) -> bool:
    def listed(values: Iterable[str] | None, value: str) -> bool:
        values = list(values or ())
        return "*" in values or value in values

    operations = rule.get("operations") or ()
    if not ("*" in operations or "CREATE" in operations):
        return False
    if not listed(rule.get("apiGroups"), group) or not listed(rule.get("apiVersions"), version):
        return False
    resources = rule.get("resources") or ()
    if not ("*" in resources or "*/*" in resources or resource in resources):
        return False
    scope = rule.get("scope", "*")
    return scope == "*" or scope == ("Namespaced" if namespaced else "Cluster")
