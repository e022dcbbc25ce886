"""The paths Katib's Experiments need in a team's namespace, judged like `network.team_paths` (a flow catalogue will
take them in): where the platform runs Katib's controller, it reaches the suggestion and early-stopping services it
makes in every Kubeflow Profile's namespace, and a trial pod there reaches the DB manager with its metrics
(components/kubeflow/katib.py names the upstream sources of the labels and ports).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from components.kubeflow.katib import CONTROLLER_POD, EARLY_STOPPING_PORT, SUGGESTION_LABEL, SUGGESTION_PORT
from components.kubeflow.network_policy import KUBEFLOW_NAMESPACE
from components.kubeflow.teams import PROFILE_NAMESPACE_LABELS
from components.tools.model.netpol import Endpoint


class Cluster(Protocol):
    """What these paths read of `network.Cluster` (named here, not imported: `network` imports this module)."""

    @property
    def namespace_labels(self) -> Mapping[str, Mapping[str, str]]: ...

    @property
    def hosts(self) -> Iterator[str]: ...

    def matching(self, namespace: str | None, labels: Mapping[str, str]) -> list[Endpoint]: ...


#: The DB manager's pods (`katib-db-manager` in `kubeflow`) and its gRPC port (consts.DefaultKatibDBManagerServicePort).
DB_MANAGER_POD = {"katib.kubeflow.org/component": "db-manager"}
DB_MANAGER_PORT = 6789
_PROFILE = "app.kubernetes.io/part-of"


def katib_paths(cluster: Cluster) -> Iterator[tuple[str, Endpoint, Endpoint, int, str]]:
    """(what, source, destination, port, protocol) for each Profile namespace, when Katib's controller runs."""
    controllers = cluster.matching(KUBEFLOW_NAMESPACE, CONTROLLER_POD)
    if not controllers:
        return
    db_managers = cluster.matching(KUBEFLOW_NAMESPACE, DB_MANAGER_POD)
    for name, labels in sorted(cluster.namespace_labels.items()):
        if labels.get(_PROFILE) != PROFILE_NAMESPACE_LABELS[_PROFILE]:
            continue
        # As Katib labels them (util.SuggestionLabels, pod webhook's mutatePodMetadata): no sidecar on either.
        suggestion = Endpoint(
            f"an Experiment's suggestion pod in {name}",
            next(cluster.hosts),
            name,
            labels,
            {SUGGESTION_LABEL: "stand-in", "katib.kubeflow.org/experiment": "stand-in"},
        )
        trial = Endpoint(
            f"a trial pod in {name}", next(cluster.hosts), name, labels, {"katib.kubeflow.org/trial": "stand-in"}
        )
        for controller in controllers:
            yield "Katib's suggestion service", controller, suggestion, SUGGESTION_PORT, "TCP"
            yield "Katib's early-stopping service", controller, suggestion, EARLY_STOPPING_PORT, "TCP"
        for server in db_managers:
            yield "a trial's metrics to Katib's DB manager", trial, server, DB_MANAGER_PORT, "TCP"
