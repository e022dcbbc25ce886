"""Katib's flows, as the concrete connections of one cluster (`network.Cluster`), for the catalogue
(`flows.CATALOGUE`): where the platform runs Katib's controller, it reaches the suggestion and early-stopping
services it makes in every Kubeflow Profile's namespace, and a trial pod there reaches the DB manager with its
metrics (components/kubeflow/katib.py names the upstream sources of the labels and ports).
"""

from __future__ import annotations

from collections.abc import Iterator

from ...kubeflow.katib import CONTROLLER_POD, EARLY_STOPPING_PORT, SUGGESTION_LABEL, SUGGESTION_PORT
from ...kubeflow.network_policy import KUBEFLOW_NAMESPACE
from . import istio
from .flows_platform import Connection, team_namespaces
from .netpol import Endpoint
from .network import Cluster

#: The DB manager's pods (`katib-db-manager` in `kubeflow`) and its gRPC port (consts.DefaultKatibDBManagerServicePort).
DB_MANAGER_POD = {"katib.kubeflow.org/component": "db-manager"}
DB_MANAGER_PORT = 6789


def suggestions(cluster: Cluster) -> Iterator[Connection]:
    """Katib's controller to an Experiment's suggestion pod of each Profile namespace, when the controller runs."""
    controllers = cluster.matching(KUBEFLOW_NAMESPACE, CONTROLLER_POD)
    for name in team_namespaces(cluster, profiles_only=True) if controllers else ():
        labels = cluster.namespace_labels[name]
        # As Katib labels them (util.SuggestionLabels): no sidecar (Katib sets `sidecar.istio.io/inject: "false"`).
        suggestion = Endpoint(
            f"an Experiment's suggestion pod in {name}",
            next(cluster.hosts),
            name,
            labels,
            {
                SUGGESTION_LABEL: "stand-in",
                "katib.kubeflow.org/experiment": "stand-in",
                istio.INJECT: "false",
            },
        )
        for controller in controllers:
            yield Connection("Katib's suggestion service", controller, suggestion, SUGGESTION_PORT)
            yield Connection("Katib's early-stopping service", controller, suggestion, EARLY_STOPPING_PORT)


def trial_metrics(cluster: Cluster) -> Iterator[Connection]:
    """A trial pod of each Profile namespace to the DB manager, when Katib's controller runs."""
    if not cluster.matching(KUBEFLOW_NAMESPACE, CONTROLLER_POD):
        return
    db_managers = cluster.matching(KUBEFLOW_NAMESPACE, DB_MANAGER_POD)
    for name in team_namespaces(cluster, profiles_only=True):
        labels = cluster.namespace_labels[name]
        trial = Endpoint(
            f"a trial pod in {name}", next(cluster.hosts), name, labels, {"katib.kubeflow.org/trial": "stand-in"}
        )
        for server in db_managers:
            yield Connection("a trial's metrics to Katib's DB manager", trial, server, DB_MANAGER_PORT)
