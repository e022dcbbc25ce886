"""Plain-dict changes that make rendered upstream objects fit to be owned by Pulumi on this platform.

Every function takes a list of objects and returns a new list; objects it changes are copied first, so the
render's output is never altered in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..cluster import capacity
from ..images import POOL_ARCHITECTURES, common_architectures
from .objects import Manifest, Scopes, containers, group_of, is_crd, is_webhook_configuration, key, pod_template

#: The only objects whose whole content a controller writes: webhook serving certificates the JobSet, Trainer and
#: LWS cert rotators and Knative's webhooks create and rotate themselves. Pulumi owns the empty Secret, never its
#: data (owning it would undo every rotation).
CONTROLLER_FILLED_SECRETS = frozenset(
    {
        ("kubeflow-system", "jobset-webhook-server-cert"),
        ("kubeflow-system", "kubeflow-trainer-webhook-cert"),
        ("kubeflow-system", "lws-webhook-server-cert"),
        ("knative-serving", "webhook-certs"),
        ("knative-serving", "net-istio-webhook-certs"),
    }
)

_INJECT_CA = "cert-manager.io/inject-ca-from"

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ARCHITECTURE = "kubernetes.io/arch"


def clone(obj: Manifest) -> Manifest:
    """A deep copy of a manifest (JSON data only: a JSON round trip is several times faster than deepcopy)."""
    return json.loads(json.dumps(obj))


def edit(
    objects: Iterable[Manifest], change: Callable[[Manifest], Manifest | None], when: Callable[[Manifest], bool]
) -> list[Manifest]:
    """Apply `change` to a copy of each object `when` selects; it returns the changed copy, or None to keep the
    original."""
    result = []
    for obj in objects:
        changed = change(clone(obj)) if when(obj) else None
        result.append(obj if changed is None else changed)
    return result


def strip_ca_bundles(objects: Iterable[Manifest]) -> list[Manifest]:
    """Drop caBundle from webhook configurations and CRD conversion webhooks: cert-manager's CA injector or the
    controller itself fills it in, and a value Pulumi owned would be written back on every update."""

    def change(obj: Manifest) -> Manifest | None:
        configs = []
        if is_webhook_configuration(obj):
            configs = [webhook.get("clientConfig", {}) for webhook in obj.get("webhooks") or ()]
        elif is_crd(obj):
            configs = [obj["spec"].get("conversion", {}).get("webhook", {}).get("clientConfig", {})]
        found = [config for config in configs if "caBundle" in config]
        for config in found:
            del config["caBundle"]
        return obj if found else None

    return edit(objects, change, lambda obj: is_webhook_configuration(obj) or is_crd(obj))


def drop_unresolved_ca_injection(objects: Iterable[Manifest]) -> list[Manifest]:
    """Remove a CA-injection annotation kustomize left unresolved (JobSet's CRD carries the literal
    `$(CERTIFICATE_NAMESPACE)/$(CERTIFICATE_NAME)`, a var only JobSet's own build defines); cert-manager would
    look for a Certificate of that name forever. The CRD serves a single version, so the API server never calls
    its conversion webhook and nothing needs that CA."""

    def change(obj: Manifest) -> Manifest | None:
        annotations = obj["metadata"].get("annotations") or {}
        if "$(" not in annotations.get(_INJECT_CA, ""):
            return None
        del annotations[_INJECT_CA]
        return obj

    return edit(objects, change, lambda obj: "$(" in (obj["metadata"].get("annotations") or {}).get(_INJECT_CA, ""))


def drop_cluster_scoped_namespaces(objects: list[Manifest]) -> list[Manifest]:
    """Remove metadata.namespace from cluster-scoped objects (some upstream bases set a namespace on every object,
    ClusterRoles included); the provider would otherwise see a different identity than the API server reports."""
    scopes = Scopes(objects)

    def change(obj: Manifest) -> Manifest | None:
        if "namespace" not in obj["metadata"]:
            return None
        group = group_of(obj["apiVersion"])
        if not scopes.known(group, obj["kind"]) or scopes.namespaced(group, obj["kind"]):
            return None
        del obj["metadata"]["namespace"]
        return obj

    return edit(objects, change, lambda obj: "namespace" in obj["metadata"])


def drop_aggregated_rules(objects: Iterable[Manifest]) -> list[Manifest]:
    """Remove `rules` from aggregated ClusterRoles (those with an `aggregationRule`), and an empty `rules` from any
    ClusterRole. The controller manager's clusterrole-aggregation controller owns an aggregated role's rules and
    fills them from the selected roles; Kubeflow's manifests carry `rules: []` there, and applied by Pulumi
    (server-side apply) every later preview and update failed with a field conflict with
    "clusterrole-aggregation-controller" on .rules, and refresh reported a change (Kubernetes docs, "Aggregated
    ClusterRoles": the control plane overwrites any rules given). An empty list on a plain role (Kubeflow's
    `*-ui-admin` roles, which only label themselves into an aggregate) is read back as no list, and every preview
    planned to add it again. Both found by the engine tier."""

    def change(obj: Manifest) -> Manifest | None:
        obj.pop("rules", None)
        return obj

    return edit(
        objects,
        change,
        lambda obj: obj["kind"] == "ClusterRole" and "rules" in obj and ("aggregationRule" in obj or not obj["rules"]),
    )


def clear_controller_filled_secrets(objects: Iterable[Manifest]) -> list[Manifest]:
    def change(obj: Manifest) -> Manifest | None:
        if (obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) not in CONTROLLER_FILLED_SECRETS:
            return None
        for field in ("data", "stringData"):
            obj.pop(field, None)
        return obj

    return edit(objects, change, lambda obj: obj["kind"] == "Secret")


#: Istio's validating webhook configuration. Upstream ships it failing open; istiod turns it to `Fail` once it
#: serves, and never back.
ISTIO_VALIDATOR = ("istio-validator-istio-system", "istiod")


def istio_validation_fails_closed(objects: Iterable[Manifest]) -> list[Manifest]:
    """Istio's validation webhook as istiod leaves it (`failurePolicy: Fail`), which is what Istio's own chart
    recommends for server-side apply tools: owned as `Ignore`, Pulumi would reopen it on every update. It selects
    only objects labelled `istio.io/rev`, which none of Kubeflow's are, so no install step waits on it."""
    name, service = ISTIO_VALIDATOR

    def change(obj: Manifest) -> Manifest:
        for webhook in obj["webhooks"]:
            if webhook.get("clientConfig", {}).get("service", {}).get("name") == service:
                webhook["failurePolicy"] = "Fail"
        return obj

    return edit(
        objects, change, lambda obj: obj["kind"] == "ValidatingWebhookConfiguration" and obj["metadata"]["name"] == name
    )


#: Istio's CNI node agent: a DaemonSet on every node, the system nodes included, which upstream requests resources
#: for but gives no memory limit.
ISTIO_CNI = ("DaemonSet", "istio-cni-node", "install-cni")


def istio_cni_sized(objects: Iterable[Manifest]) -> list[Manifest]:
    """The Istio CNI agent with the requests and memory limit the system node sizing counts (`ISTIO_CNI` there)."""
    kind, name, container_name = ISTIO_CNI

    def change(obj: Manifest) -> Manifest:
        for container in obj["spec"]["template"]["spec"]["containers"]:
            if container["name"] == container_name:
                container["resources"] = capacity.ISTIO_CNI.values()
        return obj

    return edit(objects, change, lambda obj: obj["kind"] == kind and obj["metadata"]["name"] == name)


def cleanup(objects: list[Manifest]) -> list[Manifest]:
    """Every change each upstream object needs before Pulumi may own it."""
    objects = strip_ca_bundles(objects)
    objects = istio_cni_sized(objects)
    objects = istio_validation_fails_closed(objects)
    objects = drop_unresolved_ca_injection(objects)
    objects = drop_cluster_scoped_namespaces(objects)
    objects = drop_aggregated_rules(objects)
    return clear_controller_filled_secrets(objects)


# ------------------------------------------------------------------------------------------------ storage


def storage_class(objects: Iterable[Manifest], name: str) -> list[Manifest]:
    """Every PersistentVolumeClaim (and StatefulSet claim template) on the given StorageClass."""

    def change(obj: Manifest) -> Manifest | None:
        if obj["kind"] == "PersistentVolumeClaim" and obj["apiVersion"] == "v1":
            obj["spec"]["storageClassName"] = name
            return obj
        if obj["kind"] == "StatefulSet" and obj["spec"].get("volumeClaimTemplates"):
            for claim in obj["spec"]["volumeClaimTemplates"]:
                claim.setdefault("spec", {})["storageClassName"] = name
            return obj
        return None

    return edit(objects, change, lambda obj: obj["kind"] in {"PersistentVolumeClaim", "StatefulSet"})


def volume_sizes(objects: Iterable[Manifest], sizes: Mapping[tuple[str, str], str]) -> list[Manifest]:
    """Claims named in `sizes` ((namespace, name) -> quantity) request that size; each must be among `objects`."""
    objects = list(objects)
    found = {
        (o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in objects
        if o["kind"] == "PersistentVolumeClaim" and o["apiVersion"] == "v1"
    }
    missing = sorted(set(sizes) - found)
    if missing:
        raise ValueError(f"claims to size not found: {', '.join('/'.join(m) for m in missing)}")

    def change(obj: Manifest) -> Manifest:
        size = sizes[(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])]
        obj["spec"].setdefault("resources", {}).setdefault("requests", {})["storage"] = size
        return obj

    return edit(
        objects,
        change,
        lambda obj: (
            obj["kind"] == "PersistentVolumeClaim"
            and (obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) in sizes
        ),
    )


def keeps_state(obj: Manifest) -> bool:
    """A workload whose pods mount a PersistentVolumeClaim (a database, an object store)."""
    template = pod_template(obj)
    if template is None:
        return False
    if obj["kind"] == "StatefulSet" and obj["spec"].get("volumeClaimTemplates"):
        return True
    return any("persistentVolumeClaim" in v for v in template.get("spec", {}).get("volumes") or ())


def stateful_placement(objects: Iterable[Manifest]) -> list[Manifest]:
    """Databases and object stores on on-demand capacity, and never voluntarily disrupted by Karpenter
    (consolidation or drift would restart them mid-write; a spot reclaim would take them down on two minutes'
    notice)."""

    def change(obj: Manifest) -> Manifest | None:
        if not keeps_state(obj):
            return None
        template = pod_template(obj)
        assert template is not None
        template.setdefault("spec", {}).setdefault("nodeSelector", {})[CAPACITY_TYPE] = "on-demand"
        template.setdefault("metadata", {}).setdefault("annotations", {})[DO_NOT_DISRUPT] = "true"
        return obj

    return edit(objects, change, keeps_state)


def pinned_architectures(objects: Iterable[Manifest]) -> list[Manifest]:
    """Pods whose images are not built for every architecture the platform's pools launch select the one(s) they
    are: Karpenter picks the cheapest allowed instance, and an amd64-only image (KFP 2.16.1, ML Metadata 1.14.0:
    kubeflow/pipelines#13957, #12705) on a Graviton node fails with `exec format error`."""

    def change(obj: Manifest) -> Manifest | None:
        template = pod_template(obj)
        if template is None:
            return None
        images = [c["image"] for c in containers(template.get("spec", {})) if c.get("image")]
        supported = common_architectures(images)
        if not images or supported >= POOL_ARCHITECTURES:
            return None
        if len(supported) != 1:
            raise ValueError(f"{key(obj)}: its images share no architecture the platform's pools launch")
        template.setdefault("spec", {}).setdefault("nodeSelector", {})[ARCHITECTURE] = next(iter(supported))
        return obj

    return edit(objects, change, lambda obj: pod_template(obj) is not None)


#: How long Pulumi waits for a workload to become ready (its own default for a Deployment: 10 minutes).
AWAIT_TIMEOUT = "pulumi.com/timeoutSeconds"
#: Pipelines' servers start only once MySQL serves: its on-demand node launches, its EBS volume attaches, it
#: initialises, and the servers that crashed meanwhile come back from their restart back-off (up to 5 minutes).
PIPELINES_READY_SECONDS = 20 * 60


def await_timeout(objects: Iterable[Manifest], seconds: int) -> list[Manifest]:
    """Give every workload among `objects` `seconds` to become ready."""

    def change(obj: Manifest) -> Manifest:
        obj["metadata"].setdefault("annotations", {})[AWAIT_TIMEOUT] = str(seconds)
        return obj

    return edit(objects, change, lambda obj: pod_template(obj) is not None)


def retarget_namespace(objects: Iterable[Manifest], old: str, new: str) -> list[Manifest]:
    """Move objects rendered for one namespace to another: every string equal to `old` and every in-cluster host
    name under it (`<svc>.<old>.svc...`). Used for the Hub's per-team model registry, rendered for upstream's
    example user namespace."""
    host = re.compile(rf"(?<=\.){re.escape(old)}(?=\.svc\b)")

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return new if value == old else host.sub(new, value)
        return value

    result = [walk(obj) for obj in objects]
    left = [str(key(o)) for o in result if old in json.dumps(o)]
    if left:
        raise ValueError(f"{old!r} still appears in: {', '.join(left)}")
    return result


def find(objects: Iterable[Manifest], kind: str, namespace: str, name: str) -> Manifest:
    """The one object of this kind, namespace and name."""
    found = [
        o
        for o in objects
        if (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) == (kind, namespace, name)
    ]
    if len(found) != 1:
        raise KeyError(f"expected one {kind} {namespace}/{name}, found {len(found)}")
    return found[0]


def replace(
    objects: Iterable[Manifest], replacements: Mapping[tuple[str, str, str], Callable[[Manifest], Manifest]]
) -> list[Manifest]:
    """Apply a change to named objects ((kind, namespace, name) -> function of a copy); each must exist once."""
    pending = dict(replacements)
    result = []
    for obj in objects:
        ident = (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        change = pending.pop(ident, None)
        result.append(obj if change is None else change(clone(obj)))
    if pending:
        raise KeyError(f"objects to change not found: {sorted(pending)}")
    return result
