"""The platform's cert-manager: the values it sets exist in the pinned chart, and its pods run on the system nodes
with the requests the system node sizing counts."""

from __future__ import annotations

from typing import Any

from components.certmanager.add_on import REPLICAS, REQUESTS, chart_values
from components.scheduling import SYSTEM_PLACEMENT

#: Every values key the platform sets, as read in the chart's values.yaml at v1.20.2
#: (github.com/cert-manager/cert-manager, deploy/charts/cert-manager/values.yaml); refcheck has no copy of it.
CHART_KEYS = {
    "crds.enabled",
    "crds.keep",
    "replicaCount",
    "podDisruptionBudget.enabled",
    "resources",
    "nodeSelector",
    "tolerations",
    "webhook.replicaCount",
    "webhook.podDisruptionBudget.enabled",
    "webhook.resources",
    "webhook.nodeSelector",
    "webhook.tolerations",
    "cainjector.replicaCount",
    "cainjector.podDisruptionBudget.enabled",
    "cainjector.resources",
    "cainjector.nodeSelector",
    "cainjector.tolerations",
    "startupapicheck.nodeSelector",
    "startupapicheck.tolerations",
}
#: Keys whose values are Kubernetes objects, not chart settings.
PASS_THROUGH = {"resources", "nodeSelector", "tolerations"}


def paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    found = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and key not in PASS_THROUGH:
            found |= paths(value, f"{path}.")
        else:
            found.add(path)
    return found


def test_every_key_the_platform_sets_is_one_the_pinned_chart_reads():
    assert paths(chart_values(placement=SYSTEM_PLACEMENT)) <= CHART_KEYS


def test_crds_come_with_the_chart_and_go_with_it():
    assert chart_values(placement=SYSTEM_PLACEMENT)["crds"] == {"enabled": True, "keep": False}


def test_every_pod_runs_on_the_system_nodes_with_the_requests_their_sizing_counts():
    values = chart_values(placement=SYSTEM_PLACEMENT)
    for name, section in (("controller", values), ("webhook", values["webhook"]), ("cainjector", values["cainjector"])):
        assert section["nodeSelector"] == dict(SYSTEM_PLACEMENT.node_selector)
        assert section["tolerations"] == [dict(t) for t in SYSTEM_PLACEMENT.tolerations]
        requests = REQUESTS[name]
        assert section["resources"] == {
            "requests": {"cpu": f"{requests.cpu_m}m", "memory": f"{requests.memory_mi}Mi"},
            # A leaking pod is restarted instead of taking the system node's memory from the other controllers.
            "limits": {"memory": f"{2 * requests.memory_mi}Mi"},
        }
        # Two replicas and a budget: draining a system node never leaves the webhook that checks Certificates down.
        assert section["replicaCount"] == REPLICAS == 2
        assert section["podDisruptionBudget"] == {"enabled": True}
    assert values["startupapicheck"]["nodeSelector"] == dict(SYSTEM_PLACEMENT.node_selector)
