"""What a delete waits for, checked against the destroy order: the claims, finalizers and API discovery that can
keep `pulumi destroy` from finishing.

    python -m components.tools.preview.destroy_estimate --stack dev     (prints these problems too;
                                                                         `destroy_estimate.teardown_problems`)

A Kubernetes delete returns at once, but the object stays until its finalizers are cleared, and Pulumi waits for it
to be gone (then gives up, failing the destroy). So each delete the stack makes is checked for what must still be
there, or already be gone, while it runs:

- a claim's `kubernetes.io/pvc-protection` holds it until no pod mounts it (pods that are only Pending count), so the
  workloads that mount it go with it or before it; a volume's `kubernetes.io/pv-protection` holds it until its
  claim is gone (kubernetes/kubernetes pkg/controller/volume/pvcprotection and pvprotection);
- an object with a controller's finalizer (a Profile, a NodePool, an Ingress) needs that controller to run until
  its delete is done: its workload, its namespace and the nodes it can run on are deleted after it;
- a namespace is deleted by the namespace controller, which removes its content and waits for every finalizer in
  it: what teams put there (InferenceServices, Katib Experiments, Kueue's Workloads and pods, ...) needs its
  controller, as above;
- that controller also lists every API group before it lets a namespace go: while an aggregated API (an APIService)
  has no ready backend, every namespace being deleted stays Terminating (NamespaceDeletionDiscoveryFailure;
  kubernetes/kubernetes#75788, prometheus-operator/kube-prometheus#275). So an APIService's release is either
  uninstalled (which removes the APIService) no later than the namespace's delete starts, or its backend runs
  until that delete ends.

A requirement met by "what it needs goes with the EKS cluster" always holds (the cluster goes after everything in
it); any other is met only by an edge of the graph (the waiting delete depends on what it needs), except API
discovery, which is judged on the engine's levels (`destroy_estimate`): the uninstall that removes an APIService
runs in the namespace's level or an earlier one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .inventory import Inventory, Recorded

NAMESPACE = "kubernetes:core/v1:Namespace"
RELEASE = "kubernetes:helm.sh/v3:Release"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
VOLUME = "kubernetes:core/v1:PersistentVolume"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
#: What is deleted with the EKS cluster goes after everything in it.
CLUSTER_TYPES = frozenset({"aws:eks/cluster:Cluster", "eks:index:Cluster"})
#: Kinds whose objects run pods (their pod template is `spec.template`, a CronJob's `spec.jobTemplate.spec.template`).
WORKLOAD_TYPES = frozenset(
    f"kubernetes:{k}" for k in ("apps/v1:Deployment", "apps/v1:StatefulSet", "apps/v1:DaemonSet", "batch/v1:Job")
)
#: Labels of the namespaces teams work in: Kubeflow's Profiles' (kubeflow/dashboard profile-controller) and the
#: stack's own team namespaces (`storage.fsx.namespaces`, team stacks), which carry `eksml.io/team`.
TEAM_LABEL = "eksml.io/team"
#: Kubeflow's Profiles' namespaces (the profile controller labels them so; the stack plans them with it).
PROFILE_NAMESPACES = ("app.kubernetes.io/part-of", "kubeflow-profile")
#: Kueue queues and finalizes only in namespaces with this label (`components.kueue.queues`).
KUEUE_MANAGED = ("eksml.io/kueue", "managed")


@dataclass(frozen=True)
class Controller:
    """A controller the stack runs: a Helm release (`chart`) or a Kubeflow workload (`namespace`/`name`)."""

    description: str
    chart: str | None = None
    namespace: str | None = None
    name: str | None = None

    def find(self, inventory: Inventory) -> Recorded | None:
        for resource in inventory.resources:
            if self.chart is not None and resource.type == RELEASE and resource.inputs.get("name") == self.chart:
                return resource
            if self.name is not None and resource.type in WORKLOAD_TYPES:
                meta = resource.inputs.get("metadata") or {}
                if (meta.get("namespace"), meta.get("name")) == (self.namespace, self.name):
                    return resource
        return None


KSERVE = Controller("KServe's controller and webhook", chart="kserve")
KUEUE = Controller("Kueue's controller and webhooks", chart="kueue")
KATIB = Controller("Katib's controller and webhook", namespace="kubeflow", name="katib-controller")
PROFILES = Controller("Kubeflow's profile controller", namespace="kubeflow", name="profiles-deployment")
KARPENTER = Controller("the Karpenter controller", chart="karpenter")
LOAD_BALANCER = Controller("the load balancer controller", chart="aws-load-balancer-controller")


@dataclass(frozen=True)
class Finalizer:
    """A finalizer a controller of the stack clears, on what teams create in their namespaces (`in_namespaces`) or
    on the stack's own objects of a type (`on_type`), with where its name comes from."""

    kind: str
    name: str
    controller: Controller
    source: str
    on_type: str | None = None
    #: (label, value) a namespace must carry to hold these objects; value None: any value.
    in_namespaces: tuple[str, str | None] | None = None


FINALIZERS: tuple[Finalizer, ...] = (
    Finalizer(
        "InferenceService",
        "inferenceservice.finalizers",
        KSERVE,
        "kserve/kserve v0.16.0 pkg/controller/v1beta1/inferenceservice/controller.go",
        in_namespaces=(TEAM_LABEL, None),
    ),
    Finalizer(
        "Workload",
        "kueue.x-k8s.io/resource-in-use",
        KUEUE,
        "kubernetes-sigs/kueue v0.19.2 pkg/constants (ResourceInUseFinalizerName)",
        in_namespaces=KUEUE_MANAGED,
    ),
    Finalizer(
        "Pod",
        "kueue.x-k8s.io/managed",
        KUEUE,
        "kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/pod/pod_webhook.go (PodFinalizer)",
        in_namespaces=KUEUE_MANAGED,
    ),
    Finalizer(
        "Experiment",
        "update-prometheus-metrics",
        KATIB,
        "kubeflow/katib pkg/controller.v1beta1/experiment/experiment_controller.go",
        # Kubeflow's teams (Profiles' namespaces); a `storage.fsx.namespaces` namespace is made before Kubeflow,
        # so nothing orders it before Katib's controller: docs/teardown.md says to delete Experiments there first.
        in_namespaces=PROFILE_NAMESPACES,
    ),
    Finalizer(
        "Profile",
        "profile-finalizer",
        PROFILES,
        "kubeflow/dashboard components/profile-controller/controllers/profile_controller.go",
        on_type="kubernetes:kubeflow.org/v1:Profile",
    ),
    Finalizer(
        "NodePool",
        "karpenter.sh/termination",
        KARPENTER,
        "aws/karpenter-provider-aws v1.14.1: the NodeClaims of a pool being deleted",
        on_type=NODE_POOL,
    ),
    Finalizer(
        "EC2NodeClass",
        "karpenter.k8s.aws/termination",
        KARPENTER,
        "aws/karpenter-provider-aws v1.14.1 pkg/controllers/nodeclass (instance profiles)",
        on_type="kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
    ),
    Finalizer(
        "Ingress",
        "ingress.k8s.aws/resources",
        LOAD_BALANCER,
        "kubernetes-sigs/aws-load-balancer-controller pkg/ingress (its load balancer)",
        on_type="kubernetes:networking.k8s.io/v1:Ingress",
    ),
)

#: Charts that register an aggregated API (APIService), with the file of the chart that does.
API_SERVICES: Mapping[str, str] = {
    "kueue": "kueue chart 0.19.2 templates/visibility/apiservice_v1beta1.yaml, apiservice_v1beta2.yaml",
    "prometheus-adapter": "prometheus-adapter chart 5.2.0 templates/custom-metrics-apiservice.yaml",
}


@dataclass(frozen=True)
class Problem:
    """A delete that waits for something the destroy order removes first (or never removes first)."""

    subject: Recorded
    finalizer: str
    needs: str

    def __str__(self) -> str:
        kind = self.subject.type.rsplit(":", 1)[-1]
        return f"{kind} {self.subject.name}: {self.finalizer}: {self.needs}"


class Order:
    """The destroy order of an inventory: who deletes each resource, and the engine's levels."""

    def __init__(self, inventory: Inventory, levels: Mapping[str, int]):
        self.inventory = inventory
        #: URN -> the engine's delete level (`destroy_estimate.Estimate.levels`), first deleted first.
        self.levels = levels
        self.namespaces = {n.inputs["metadata"]["name"]: n for n in inventory.of_type(NAMESPACE)}

    def deleter(self, resource: Recorded) -> Recorded:
        """The resource whose delete call removes this one: itself, or the end of its `deleted_with` chain."""
        seen = {resource.urn}
        while resource.deleted_with is not None:
            try:
                resource = self.inventory.by_urn(resource.deleted_with)
            except KeyError:
                break
            if resource.urn in seen:
                break
            seen.add(resource.urn)
        return resource

    def with_cluster(self, resource: Recorded) -> bool:
        return self.deleter(resource).type in CLUSTER_TYPES

    def before(self, first: Recorded, then: Recorded) -> bool:
        """Whether `first`'s delete is done before `then`'s starts, by an edge (or `then` goes with the cluster)."""
        a, b = self.deleter(first), self.deleter(then)
        return self.with_cluster(then) or (a.urn != b.urn and self.inventory.depends_on(a, b))

    def removers(self, resource: Recorded) -> list[Recorded]:
        """What removes a namespaced object from the cluster: its own deleter, and its namespace's delete."""
        found = [self.deleter(resource)]
        namespace = self.namespaces.get(_namespace_of(resource) or "")
        if namespace is not None and not self.with_cluster(namespace):
            found.append(namespace)
        return found

    def lifeline(self, controller: Recorded) -> list[Recorded]:
        """What ends a controller when deleted: its own resource, its namespace and the nodes it can run on."""
        found = [controller]
        namespace = _namespace_of(controller)
        if namespace in self.namespaces:
            found.append(self.namespaces[namespace])
        found += self.inventory.of_type(NODE_GROUP)
        if controller.type in WORKLOAD_TYPES:
            spec = ((controller.inputs.get("spec") or {}).get("template") or {}).get("spec") or {}
            found += [p for p in self.inventory.of_type(NODE_POOL) if _tolerates(spec, _pool_taints(p))]
        return found


def _namespace_of(resource: Recorded) -> str | None:
    if resource.type == RELEASE:
        return resource.inputs.get("namespace")
    return (resource.inputs.get("metadata") or {}).get("namespace")


def _pool_taints(pool: Recorded) -> list[Mapping[str, str]]:
    return list(((pool.inputs.get("spec") or {}).get("template") or {}).get("spec", {}).get("taints") or ())


def _tolerates(pod_spec: Mapping[str, Any], taints: Iterable[Mapping[str, str]]) -> bool:
    """Whether a pod with this spec may run despite `taints` (those that keep pods off)."""
    tolerations = list(pod_spec.get("tolerations") or ())
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(
            (t.get("operator") == "Exists" and t.get("key") in (None, taint["key"]))
            or (t.get("key"), t.get("value")) == (taint["key"], taint.get("value"))
            for t in tolerations
        ):
            return False
    return True


def controller_problems(order: Order) -> list[Problem]:
    """Each delete that waits on a controller's finalizer, with what of that controller may go first."""
    problems: list[Problem] = []
    inventory = order.inventory
    for finalizer in FINALIZERS:
        controller = finalizer.controller.find(inventory)
        if controller is None:
            continue
        waiting = inventory.of_type(finalizer.on_type) if finalizer.on_type else _holders(order, finalizer)
        for subject in waiting:
            if order.with_cluster(subject):
                continue  # no delete call: nothing waits
            for part in order.lifeline(controller):
                if not order.before(subject, part):
                    what = "its" if finalizer.on_type else f"the {finalizer.kind}s teams put in it: their"
                    problems.append(
                        Problem(
                            subject,
                            f"{what} finalizer {finalizer.name} ({finalizer.source})",
                            f"needs {finalizer.controller.description} until it is gone, but {part.name} "
                            f"({part.type.rsplit(':', 1)[-1]}) may be deleted first: add an edge to it",
                        )
                    )
    return problems


def _holders(order: Order, finalizer: Finalizer) -> list[Recorded]:
    assert finalizer.in_namespaces is not None
    label, value = finalizer.in_namespaces
    found = []
    for namespace in order.namespaces.values():
        labels = namespace.inputs["metadata"].get("labels") or {}
        if label in labels and (value is None or labels[label] == value):
            found.append(namespace)
    return found


def claim_problems(order: Order) -> list[Problem]:
    """Claims whose mounting pods go after them, and static volumes whose claim goes after them."""
    problems: list[Problem] = []
    inventory = order.inventory
    for claim in inventory.of_type(CLAIM):
        if order.with_cluster(claim):
            continue
        meta = claim.inputs["metadata"]
        for workload in (w for w in inventory.resources if w.type in WORKLOAD_TYPES):
            if _namespace_of(workload) != meta.get("namespace") or meta["name"] not in _claims_mounted(workload):
                continue
            removers = order.removers(workload)
            if order.deleter(claim).urn not in {r.urn for r in removers} and not any(
                order.before(r, claim) for r in removers
            ):
                problems.append(
                    Problem(
                        claim,
                        "kubernetes.io/pvc-protection",
                        f"waits for the pods of {workload.name}, which go only with "
                        f"{' or '.join(r.name for r in removers)}: let the claim go with that (deleted_with) "
                        "or after it",
                    )
                )
    for volume in inventory.of_type(VOLUME):
        ref = (volume.inputs.get("spec") or {}).get("claimRef") or {}
        for claim in inventory.of_type(CLAIM):
            meta = claim.inputs["metadata"]
            if (meta.get("namespace"), meta["name"]) != (ref.get("namespace"), ref.get("name")):
                continue
            if order.with_cluster(volume) or order.deleter(claim).urn == order.deleter(volume).urn:
                continue
            if order.inventory.depends_on(order.deleter(volume), order.deleter(claim)):
                problems.append(
                    Problem(
                        volume,
                        "kubernetes.io/pv-protection",
                        f"waits for its claim, which goes only with {order.deleter(claim).name}, deleted after it",
                    )
                )
    return problems


def _claims_mounted(workload: Recorded) -> set[str]:
    spec = (workload.inputs.get("spec") or {}).get("template", {}).get("spec") or {}
    return {
        v["persistentVolumeClaim"]["claimName"] for v in spec.get("volumes") or () if v.get("persistentVolumeClaim")
    }


def discovery_problems(order: Order) -> list[Problem]:
    """Namespaces whose delete may run while an APIService the stack registers has no backend."""
    problems: list[Problem] = []
    inventory = order.inventory
    for chart, source in sorted(API_SERVICES.items()):
        release = next((r for r in inventory.of_type(RELEASE) if r.inputs.get("name") == chart), None)
        if release is None:
            continue
        removed_at = None if order.with_cluster(release) else order.levels[order.deleter(release).urn]
        for namespace in order.namespaces.values():
            if order.with_cluster(namespace):
                continue
            at = order.levels[namespace.urn]
            if removed_at is not None and removed_at <= at:
                # Uninstalled before the namespace's delete, or beside it: Helm deletes an APIService before the
                # rest of a release (helm/helm pkg/release/util/kind_sorter.go, UninstallOrder), and the namespace
                # controller retries a failed discovery, so the namespace ends once the APIService is gone.
                continue
            ends = [p for p in order.lifeline(release) if not order.with_cluster(p)]
            if all(order.levels[order.deleter(p).urn] > at for p in ends):
                continue  # its backend runs until the namespace is gone
            problems.append(
                Problem(
                    namespace,
                    f"API discovery of {chart}'s APIService ({source})",
                    "its delete may run while that API has no backend (the namespace then stays Terminating): "
                    "uninstall the release (it takes its APIService) no later than the namespace, or keep its "
                    "backend until after",
                )
            )
    return problems


def problems(inventory: Inventory, levels: Mapping[str, int]) -> list[Problem]:
    """Every delete of a full destroy that would wait for what goes after it (empty when destroy can finish), with
    the engine's delete levels of the inventory."""
    order = Order(inventory, levels)
    return [*claim_problems(order), *controller_problems(order), *discovery_problems(order)]
