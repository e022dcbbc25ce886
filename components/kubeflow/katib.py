"""Katib as the platform runs it (pure): the controller's rights narrowed to what Katib 0.19 uses, one active
controller among the replicas, the paths its suggestion services need in a team's namespace, and trials kept free of
Istio's sidecar.

Facts from kubeflow/katib at v0.19.0 (the images the pinned tree's `katib-with-kubeflow` install names):

- Secrets. Upstream's `katib-controller` ClusterRole gives get, list, watch, patch and update on every Secret. The
  internal cert generator needs them on `katib-webhook-cert` in Katib's namespace
  (`pkg/certgenerator/v1beta1/generator.go`), and it runs only with `init.certGenerator.enable` (cmd/katib-controller/
  v1beta1/main.go); the pinned `katib-cert-manager` install leaves it off and cert-manager writes that Secret. The
  other use is the pod webhook: for a trial container without a `command` it reads the image's entrypoint from the
  registry with the pod's pull Secrets (`pkg/webhook/v1beta1/pod/utils.go` `getRemoteImage`, k8schain), a `get` of
  each Secret in the trial's namespace. So the cluster-wide grant goes, and each team namespace grants `get`.
- Suggestions. The controller makes each Experiment's suggestion Deployment and Service in the Experiment's
  namespace and calls it over gRPC on 6789 (`suggestion-api`), and its early-stopping service on 6788
  (`earlystop-api`) (`pkg/controller.v1beta1/consts/const.go`, `suggestion/composer/composer.go`). The pods carry
  `sidecar.istio.io/inject: "false"` (`util.SuggestionLabels`), so no sidecar, and no AuthorizationPolicy, stands in
  the way: only the namespace's NetworkPolicies.
- Leader election. `init.controller.enableLeaderElection` (default false) and `leaderElectionID`
  (`pkg/apis/config/v1beta1/types.go`), passed to controller-runtime v0.22's manager, whose lock is a Lease in the
  controller's namespace.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from .. import network_policies as netpol
from ..admission_policy import Requests, policy_and_binding
from .objects import Manifest
from .transform import clone

NAMESPACE = "kubeflow"
CONTROLLER = "katib-controller"
CONTROLLER_POD = {"katib.kubeflow.org/component": "controller"}
#: The label every suggestion pod carries (its value: the Suggestion's, and Experiment's, name).
SUGGESTION_LABEL = "katib.kubeflow.org/suggestion"
SUGGESTION_PORT = 6789
EARLY_STOPPING_PORT = 6788
CONFIG_MAP = "katib-config"
CONFIG_KEY = "katib-config.yaml"
TRIAL_TEMPLATES_LABEL = ("katib.kubeflow.org/component", "trial-templates")
SIDECAR_INJECT = "sidecar.istio.io/inject"
#: controller-runtime's leader election takes and renews a Lease (coordination.k8s.io) in the controller's namespace.
LEADER_ELECTION_ROLE = "katib-controller-leader-election"
SECRETS_ROLE = "katib-controller-pull-secrets"
ALLOW_CONTROLLER = "allow-katib-controller"


def _is(obj: Manifest, kind: str, name: str) -> bool:
    return obj["kind"] == kind and obj["metadata"]["name"] == name


def without_cluster_secrets(role: Manifest) -> Manifest:
    """The controller's ClusterRole without its rule on Secrets (the cert generator's, which is off)."""
    role = clone(role)
    role["rules"] = [r for r in role.get("rules") or () if "secrets" not in (r.get("resources") or ())]
    return role


def leader_elected(config_map: Manifest) -> Manifest:
    """katib-config with leader election on: of the controller's replicas, only the leader reconciles."""
    config_map = clone(config_map)
    config = yaml.safe_load(config_map["data"][CONFIG_KEY])
    config.setdefault("init", {}).setdefault("controller", {})["enableLeaderElection"] = True
    config_map["data"][CONFIG_KEY] = yaml.safe_dump(config, sort_keys=False)
    return config_map


def _job_template_without_sidecar(text: str) -> str:
    template = yaml.safe_load(text)
    if template.get("kind") != "Job":
        return text
    metadata = template["spec"]["template"].setdefault("metadata", {})
    metadata.setdefault("labels", {})[SIDECAR_INJECT] = "false"
    return yaml.safe_dump(template, sort_keys=False)


def trial_templates_without_sidecar(config_map: Manifest) -> Manifest:
    """The shipped trial templates (the UI's choices) with their Job pods opted out of Istio's sidecar."""
    config_map = clone(config_map)
    config_map["data"] = {k: _job_template_without_sidecar(v) for k, v in config_map["data"].items()}
    return config_map


def apply(objects: Iterable[Manifest]) -> list[Manifest]:
    """Katib's objects as the platform runs them (others unchanged): see the module's docstring."""
    result = []
    for obj in objects:
        if _is(obj, "ClusterRole", CONTROLLER):
            obj = without_cluster_secrets(obj)
        elif _is(obj, "ConfigMap", CONFIG_MAP) and obj["metadata"].get("namespace") == NAMESPACE:
            obj = leader_elected(obj)
        elif (
            obj["kind"] == "ConfigMap"
            and (obj["metadata"].get("labels") or {}).get(TRIAL_TEMPLATES_LABEL[0]) == TRIAL_TEMPLATES_LABEL[1]
        ):
            obj = trial_templates_without_sidecar(obj)
        result.append(obj)
    return result


def _role(namespace: str, name: str, rules: list[dict[str, Any]]) -> list[Manifest]:
    subject = {"kind": "ServiceAccount", "name": CONTROLLER, "namespace": NAMESPACE}
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [subject],
        },
    ]


def leader_election_role() -> list[Manifest]:
    """The Lease the controller's replicas elect their leader with (get, create and renew it)."""
    rules = [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "list", "watch", "create", "update", "patch"],
        }
    ]
    return _role(NAMESPACE, LEADER_ELECTION_ROLE, rules)


def suggestion_allowance(namespace: str) -> Manifest:
    """The controller to the suggestion and early-stopping services of the namespace's Experiments."""
    policy = netpol.policy(
        namespace,
        ALLOW_CONTROLLER,
        ingress=[
            netpol.rule(
                [netpol.namespace(NAMESPACE, CONTROLLER_POD)],
                netpol.ports(SUGGESTION_PORT, EARLY_STOPPING_PORT),
                to=False,
            )
        ],
    )
    policy["spec"]["podSelector"] = {"matchExpressions": [{"key": SUGGESTION_LABEL, "operator": "Exists"}]}
    return policy


def team_manifests(namespace: str) -> list[Manifest]:
    """What a team namespace needs for its Experiments: the controller admitted to their suggestion services, and
    allowed to read the pull Secrets of its trial pods."""
    rules = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    return [suggestion_allowance(namespace), *_role(namespace, SECRETS_ROLE, rules)]


#: Experiments whose trials are Jobs, in a namespace where Istio injects its sidecar, must opt the Job's pods out: the
#: sidecar never exits, so the Job never completes, and Katib's metrics collector (which waits, in the pod's shared
#: process namespace, for every other container's processes: `pkg/metricscollector/v1beta1/common/pns.go`) waits
#: for it forever. Katib's own examples set the label on every Job trial (kubeflow/katib v0.19.0
#: `examples/v1beta1`, `conformance/run.sh --trial-pod-labels '{"sidecar.istio.io/inject": "false"}'`); Istio
#: reads it on the pod (istio.io, Sidecar injection: "Controlling the injection policy"). No mutation can add it:
#: the cluster serves no MutatingAdmissionPolicy (see `gpu_scheduling`) and Katib does not, so the policy refuses
#: the Experiment at once, with the field to set, rather than letting its trials hang.
EXPERIMENT_POLICY = "katib-job-trials-without-sidecar"
_TRIAL = "object.spec.trialTemplate.trialSpec"
_JOB_TRIAL = (
    f"has(object.spec.trialTemplate) && has(object.spec.trialTemplate.trialSpec) && has({_TRIAL}.kind) && "
    f"{_TRIAL}.kind == 'Job'"
)
_POD_METADATA = (
    f"has({_TRIAL}.spec) && has({_TRIAL}.spec.template) && has({_TRIAL}.spec.template.metadata) ? "
    f"{_TRIAL}.spec.template.metadata : {{}}"
)
_OPTED_OUT = " || ".join(
    f"(has(variables.metadata.{field}) && '{SIDECAR_INJECT}' in variables.metadata.{field} && "
    f"variables.metadata.{field}['{SIDECAR_INJECT}'] == 'false')"
    for field in ("labels", "annotations")
)


def experiment_policy() -> list[Manifest]:
    """The ValidatingAdmissionPolicy and binding that refuse an Experiment whose Job trials would keep a sidecar."""
    message = (
        "this namespace injects Istio's sidecar, which never exits: a Job trial would never complete and Katib's "
        "metrics collector would wait for it forever; set "
        f"spec.trialTemplate.trialSpec.spec.template.metadata.labels['{SIDECAR_INJECT}'] to \"false\""
    )
    return policy_and_binding(
        EXPERIMENT_POLICY,
        Requests("kubeflow.org", "v1beta1", "experiments", ("CREATE", "UPDATE")),
        [{"expression": _OPTED_OUT, "message": message, "reason": "Invalid"}],
        namespaces={"matchLabels": {"istio-injection": "enabled"}},
        match_conditions=[{"name": "job-trials", "expression": _JOB_TRIAL}],
        variables=[{"name": "metadata", "expression": _POD_METADATA}],
    )


def platform_manifests() -> list[Manifest]:
    """What the platform adds to Katib's install: the controllers' leader election rights, the Experiment policy."""
    return [*leader_election_role(), *experiment_policy()]
