"""Which workloads block other pods' creation while they are down, read from plain Kubernetes objects (pure).

A fail-closed admission webhook refuses every request it intercepts while no pod backs it; the mesh's control plane
injects sidecars and its gateway and identity provider sign users in. The Kubeflow part hardens these, and the model
of the running platform checks that every one of them, from any source, is hardened: both read this one list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Manifest = Mapping[str, Any]

#: Besides webhook backends: the mesh's control plane (sidecar injection), its gateway, the identity provider (every
#: sign-in) and oauth2-proxy, the gateway's external authorizer: Kubeflow's mesh config names it with no `failOpen`,
#: and Istio's default (false) refuses every request while it cannot be reached (common/oauth2-proxy/components/
#: istio-external-auth-patches/patches/cm.enable-oauth2-proxy.yaml; Istio MeshConfig EnvoyExternalAuthorizationHttp
#: Provider `failOpen`). Recognised by their images.
BLOCKING_IMAGES: Mapping[str, str] = {
    "istiod": "/pilot:",
    "the ingress gateway": "/proxyv2:",
    "Dex": "dexidp/dex",
    "oauth2-proxy": "oauth2-proxy/oauth2-proxy:",
}
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


def _pod_labels(obj: Manifest) -> Mapping[str, str]:
    return ((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}


def _images(obj: Manifest) -> list[str]:
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c.get("image", "") for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]]


def blocking_deployments(objects: Iterable[Manifest], default_namespace: str = "default") -> list[tuple[Manifest, str]]:
    """Each Deployment whose outage blocks pod creation, with why, in the order first found."""
    objects = list(objects)
    deployments = [o for o in objects if o.get("kind") == "Deployment"]

    def namespace(obj: Manifest) -> str:
        return obj.get("metadata", {}).get("namespace") or default_namespace

    services = {(namespace(o), o["metadata"]["name"]): o for o in objects if o.get("kind") == "Service"}
    found: dict[tuple[str, str], tuple[Manifest, str]] = {}
    for config in (o for o in objects if o.get("kind") in WEBHOOK_KINDS):
        for hook in config.get("webhooks") or ():
            service = (hook.get("clientConfig") or {}).get("service")
            if not service or hook.get("failurePolicy", "Fail") != "Fail":
                continue
            ns = service.get("namespace", default_namespace)
            selector = ((services.get((ns, service["name"])) or {}).get("spec") or {}).get("selector") or {}
            for deployment in deployments:
                labels = _pod_labels(deployment)
                if selector and namespace(deployment) == ns and all(labels.get(k) == v for k, v in selector.items()):
                    why = f"backs fail-closed webhook {hook['name']}"
                    found.setdefault((ns, deployment["metadata"]["name"]), (deployment, why))
    for deployment in deployments:
        for what, image_part in BLOCKING_IMAGES.items():
            if any(image_part in image for image in _images(deployment)):
                found.setdefault((namespace(deployment), deployment["metadata"]["name"]), (deployment, what))
    return list(found.values())
