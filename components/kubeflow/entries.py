"""The upstream entries (kustomize folders of community-distribution) the platform installs, and which family of the
install order each belongs to.

The default set is upstream's example install without cert-manager (the platform owns one installation, see
`components.certmanager`), Katib, Spark, the Hub, Knative (each optional here), KServe (not renderable from the pinned
subset) and the example user's Profile (teams replace it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Part(StrEnum):
    """Which group of the install order an entry's objects join (see `staging`)."""

    ISSUER = "issuer"
    ISTIO = "istio"
    AUTH = "auth"
    APPS = "apps"


@dataclass(frozen=True)
class Entry:
    path: str  # below community-distribution/
    part: Part


#: Upstream's cert-manager release manifest: rendered and tested, never installed by this part (the platform's chart
#: installs the same version; a test holds the two together).
CERT_MANAGER = Entry("common/cert-manager/base", Part.ISSUER)
#: Kubeflow's self-signing ClusterIssuer (the overlay's NetworkPolicies are for cert-manager's namespace, which
#: the platform owns, and are left out: see `plan`).
CERT_MANAGER_ISSUER = Entry("common/cert-manager/overlays/kubeflow", Part.ISSUER)
ISTIO_CRDS = Entry("common/istio/istio-crds/base", Part.ISTIO)
ISTIO_NAMESPACE = Entry("common/istio/istio-namespace/base", Part.ISTIO)
ISTIO = Entry("common/istio/istio-install/overlays/oauth2-proxy", Part.ISTIO)
OAUTH2_PROXY = Entry("common/oauth2-proxy/overlays/m2m-dex-only", Part.AUTH)
DEX = Entry("common/dex/overlays/oauth2-proxy", Part.AUTH)
KUBEFLOW_NAMESPACE = Entry("common/kubeflow-namespace/base", Part.APPS)
KUBEFLOW_ROLES = Entry("common/kubeflow-roles/base", Part.APPS)
KUBEFLOW_ISTIO = Entry("common/istio/kubeflow-istio-resources/base", Part.APPS)
PIPELINES = Entry("applications/pipeline/overlays", Part.APPS)
DASHBOARD = Entry("applications/dashboard/overlays/istio", Part.APPS)
NOTEBOOKS = Entry("applications/notebooks-v1/overlays/istio", Part.APPS)
TRAINER = Entry("applications/trainer/overlays", Part.APPS)

KATIB = Entry("applications/katib/upstream/installs/katib-with-kubeflow", Part.APPS)
SPARK = Entry("applications/spark/spark-operator/overlays/kubeflow", Part.APPS)
HUB_REGISTRY = Entry("applications/hub/overlays/model-registry", Part.APPS)
HUB_CATALOG = Entry("applications/hub/overlays/model-catalog", Part.APPS)
KNATIVE = Entry("common/knative/knative-serving/overlays/gateways", Part.APPS)
CLUSTER_LOCAL_GATEWAY = Entry("common/istio/cluster-local-gateway/base", Part.ISTIO)

#: oauth2-proxy that also accepts the cluster's service-account tokens (its OIDC issuer) at the gateway, in place of
#: OAUTH2_PROXY (`selected(cluster_tokens=True)`).
OAUTH2_PROXY_EKS_TOKENS = Entry("common/oauth2-proxy/overlays/m2m-dex-and-eks", Part.AUTH)
#: Upstream alternatives to default entries; rendered and tested, not selectable by configuration yet.
PIPELINES_KUBERNETES_NATIVE = Entry(
    "applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user-k8s-native", Part.APPS
)
TRAINER_DATA_CACHE = Entry("applications/trainer/upstream/overlays/data-cache", Part.APPS)

DEFAULT: tuple[Entry, ...] = (
    CERT_MANAGER_ISSUER,
    ISTIO_CRDS,
    ISTIO_NAMESPACE,
    ISTIO,
    OAUTH2_PROXY,
    DEX,
    KUBEFLOW_NAMESPACE,
    KUBEFLOW_ROLES,
    KUBEFLOW_ISTIO,
    PIPELINES,
    DASHBOARD,
    NOTEBOOKS,
    TRAINER,
)

#: Optional components by their configuration name. The Hub's model registry is installed per team and only when a
#: team is named for it (see `selected`).
OPTIONAL: dict[str, tuple[Entry, ...]] = {
    "katib": (KATIB,),
    "spark": (SPARK,),
    "hub": (HUB_CATALOG,),
    "knative": (KNATIVE, CLUSTER_LOCAL_GATEWAY),
}

ALTERNATIVES: tuple[Entry, ...] = (PIPELINES_KUBERNETES_NATIVE, TRAINER_DATA_CACHE)

#: Every entry the renderer supports, in install-file order.
ALL: tuple[Entry, ...] = (
    CERT_MANAGER,
    *DEFAULT,
    *(e for group in OPTIONAL.values() for e in group),
    HUB_REGISTRY,
    OAUTH2_PROXY_EKS_TOKENS,
    *ALTERNATIVES,
)

BY_PATH: dict[str, Entry] = {entry.path: entry for entry in ALL}


def selected(
    *,
    katib: bool = False,
    spark: bool = False,
    hub: bool = False,
    knative: bool = False,
    hub_registry: bool = False,
    cluster_tokens: bool = False,
) -> tuple[Entry, ...]:
    """The entries to install: the default set plus the optional components asked for, in a stable order."""
    chosen = [OAUTH2_PROXY_EKS_TOKENS if entry == OAUTH2_PROXY and cluster_tokens else entry for entry in DEFAULT]
    for name, wanted in (("katib", katib), ("spark", spark), ("hub", hub), ("knative", knative)):
        if wanted:
            chosen.extend(OPTIONAL[name])
    if hub_registry:
        if not hub:
            raise ValueError("the Hub's model registry needs the Hub (hub) enabled")
        chosen.append(HUB_REGISTRY)
    return tuple(chosen)
