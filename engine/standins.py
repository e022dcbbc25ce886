"""Stand-ins for the controllers whose work the stack waits for, and which cannot run in the box (kwok's pods run no
containers). Each does only the one thing the stack's own objects rely on, as the real controller would:

- **cert-manager** (the chart the stack installs): marks Issuers, ClusterIssuers and Certificates Ready. The stack
  gates Kubeflow's later stages on `condition=Ready` of these (components/kubeflow/staging.py).
- **cert-manager's CA injector**: writes a CA bundle into webhook configurations, CRD conversion webhooks and
  APIServices annotated `cert-manager.io/inject-ca-from[-secret]`. The stack gates on the injected bundle.
- **istiod's webhook patcher**: writes istiod's CA bundle into the webhook configurations of its revision
  (labelled `istio.io/rev`), which istiod does at start; the stack gates Kubeflow's apps on it.
- **the cert rotators inside JobSet's and Kubeflow Trainer's controllers**: each writes its own CA bundle into its
  own webhook configurations (listed in `SELF_INJECTED`); the stack gates Kubeflow's app resources on them.
- **Karpenter** (the chart the stack installs): launches a node for pods the scheduler cannot place, from the
  NodePool and instance type our model of Karpenter picks (tests/karpenter_fit.py `place`, over the NodePools read
  from the API server), never past a pool's limits; and removes a NodePool's nodes once the NodePool is gone, as
  Karpenter terminates them when its NodePool is deleted. The real scheduler then places the pods.
- **the EBS CSI driver's provisioner** (an EKS add-on): gives a claim of an `ebs.csi.aws.com` storage class a
  volume once the scheduler has picked its node (WaitForFirstConsumer) or at once (Immediate), and deletes a
  released volume whose reclaim policy is Delete, so destroy leaves no volume behind.

Run inside the box (`python -m engine.standins <api-url> <ca> <cert> <key>`); it polls the API server each second
and stops when killed. It never changes anything else.
"""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

if TYPE_CHECKING:
    from tests.karpenter_fit import Landing

CERT_MANAGER = "cert-manager.io/v1"
_CERT_KINDS = ("issuers", "clusterissuers", "certificates")
INJECT = ("cert-manager.io/inject-ca-from", "cert-manager.io/inject-ca-from-secret")
EBS = "ebs.csi.aws.com"
#: Webhook configurations whose controller injects its own CA bundle (open-policy-agent's cert-controller rotator,
#: which JobSet's and Trainer's managers run), by name: the controller.
SELF_INJECTED = {
    "jobset-mutating-webhook-configuration": "JobSet's controller manager",
    "jobset-validating-webhook-configuration": "JobSet's controller manager",
    "validator.trainer.kubeflow.org": "Kubeflow Trainer's controller manager",
    "defaulter.trainer.kubeflow.org": "Kubeflow Trainer's controller manager",
}
#: istiod patches its CA into the webhook configurations labelled with its revision (istio pkg/webhooks).
ISTIO_REVISION = "istio.io/rev"
_REASON = "EngineTierStandIn"


#: The Accept header that asks the API server for a list's metadata alone.
_METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


class Api:
    def __init__(self, url: str, ca: str, cert: str, key: str) -> None:
        self.url, self.session = url.rstrip("/"), requests.Session()
        self.session.verify, self.session.cert = ca, (cert, key)
        # The machine's CA bundle variables (REQUESTS_CA_BUNDLE) would replace the box's CA, and proxies are none.
        self.session.trust_env = False

    def items(self, path: str, *, metadata_only: bool = False) -> list[dict[str, Any]]:
        """The objects at a list path; with `metadata_only`, each as its metadata alone (a PartialObjectMetadataList:
        the API server leaves the rest unencoded, which for every CRD of the stack is megabytes a round)."""
        headers = {"Accept": _METADATA_LIST} if metadata_only else {}
        response = self.session.get(f"{self.url}{path}", headers=headers, timeout=30)
        if response.status_code == 404:  # the CRD is not (yet) installed
            return []
        response.raise_for_status()
        return list(response.json().get("items") or [])

    def get(self, path: str) -> dict[str, Any] | None:
        response = self.session.get(f"{self.url}{path}", timeout=30)
        if response.status_code == 404:  # deleted since it was listed
            return None
        response.raise_for_status()
        return dict(response.json())

    def patch(self, path: str, body: Any, kind: str = "application/merge-patch+json") -> None:
        response = self.session.patch(f"{self.url}{path}", json=body, headers={"Content-Type": kind}, timeout=30)
        if response.status_code not in (200, 201, 404, 409):
            response.raise_for_status()

    def post(self, path: str, body: Any) -> None:
        response = self.session.post(f"{self.url}{path}", json=body, timeout=30)
        if response.status_code not in (200, 201, 409):
            response.raise_for_status()

    def delete(self, path: str) -> None:
        response = self.session.delete(f"{self.url}{path}", timeout=30)
        if response.status_code not in (200, 202, 404):
            response.raise_for_status()


def _path(api_version: str, plural: str, namespace: str | None, name: str) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{scope}/{plural}/{name}"


def _ready(obj: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or ()
    )


def cert_manager(api: Api) -> Iterator[str]:
    """Issuers, ClusterIssuers and Certificates made Ready."""
    for plural in _CERT_KINDS:
        for obj in api.items(f"/apis/{CERT_MANAGER}/{plural}"):
            if _ready(obj) or obj["metadata"].get("deletionTimestamp"):
                continue
            meta = obj["metadata"]
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            condition = {
                "type": "Ready",
                "status": "True",
                "reason": _REASON,
                "message": "set by the engine tier's cert-manager stand-in",
                "lastTransitionTime": now,
                "observedGeneration": meta.get("generation", 1),
            }
            path = _path(CERT_MANAGER, plural, meta.get("namespace"), meta["name"]) + "/status"
            api.patch(path, {"status": {"conditions": [condition]}})
            yield f"{plural} {meta.get('namespace', '')}/{meta['name']} Ready"


def ca_injector(api: Api, bundle: str) -> Iterator[str]:
    """A CA bundle in every webhook, conversion webhook and APIService that asks cert-manager for one, and in the
    webhook configurations of istiod's revision."""
    sources = (
        ("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations"),
        ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
        ("apiextensions.k8s.io/v1", "customresourcedefinitions"),
        ("apiregistration.k8s.io/v1", "apiservices"),
    )
    for api_version, plural in sources:
        # Metadata first, every round; the whole object only of those that ask for a bundle.
        for meta in (m["metadata"] for m in api.items(f"/apis/{api_version}/{plural}", metadata_only=True)):
            annotations = meta.get("annotations") or {}
            webhooks = plural.endswith("webhookconfigurations")
            own = webhooks and (ISTIO_REVISION in (meta.get("labels") or {}) or meta["name"] in SELF_INJECTED)
            if not own and not any(a in annotations for a in INJECT):
                continue
            obj = api.get(_path(api_version, plural, None, meta["name"]))
            if obj is None:
                continue
            ops = []
            if plural.endswith("webhookconfigurations"):
                for index, webhook in enumerate(obj.get("webhooks") or ()):
                    if not (webhook.get("clientConfig") or {}).get("caBundle"):
                        ops.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle})
            elif plural == "customresourcedefinitions":
                conversion = (obj["spec"].get("conversion") or {}).get("webhook") or {}
                if conversion and not (conversion.get("clientConfig") or {}).get("caBundle"):
                    ops.append({"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": bundle})
            elif not obj["spec"].get("caBundle"):
                ops.append({"op": "add", "path": "/spec/caBundle", "value": bundle})
            if ops:
                api.patch(_path(api_version, plural, None, obj["metadata"]["name"]), ops, "application/json-patch+json")
                yield f"{plural} {obj['metadata']['name']}: CA injected"


def ebs_provisioner(api: Api) -> Iterator[str]:
    """Volumes for the claims of EBS storage classes, and released ones deleted."""
    classes = {c["metadata"]["name"]: c for c in api.items("/apis/storage.k8s.io/v1/storageclasses")}
    ebs_classes = {name for name, c in classes.items() if c.get("provisioner") == EBS}
    volumes = api.items("/api/v1/persistentvolumes")
    claimed = {(v["spec"].get("claimRef") or {}).get("uid") for v in volumes}
    for claim in api.items("/api/v1/persistentvolumeclaims"):
        meta, spec = claim["metadata"], claim["spec"]
        if spec.get("volumeName") or spec.get("storageClassName") not in ebs_classes or meta["uid"] in claimed:
            continue
        storage_class = classes[spec["storageClassName"]]
        node = (meta.get("annotations") or {}).get("volume.kubernetes.io/selected-node")
        if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer" and not node:
            continue
        name = f"pvc-{meta['uid']}"
        api.post(
            "/api/v1/persistentvolumes",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": EBS}},
                "spec": {
                    "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                    "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
                    "storageClassName": spec["storageClassName"],
                    "volumeMode": spec.get("volumeMode", "Filesystem"),
                    "claimRef": {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "namespace": meta["namespace"],
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                    "csi": {"driver": EBS, "volumeHandle": f"vol-{meta['uid'].replace('-', '')[:17]}"},
                },
            },
        )
        yield f"volume {name} for claim {meta['namespace']}/{meta['name']}"
    for volume in volumes:
        spec = volume["spec"]
        released = (volume.get("status") or {}).get("phase") == "Released"
        if (
            released
            and (spec.get("csi") or {}).get("driver") == EBS
            and spec.get("persistentVolumeReclaimPolicy") == "Delete"
        ):
            api.delete(f"/api/v1/persistentvolumes/{volume['metadata']['name']}")
            yield f"released volume {volume['metadata']['name']} deleted"


ZONE = "topology.kubernetes.io/zone"


def spread_zones(
    pod: dict[str, Any], zones: list[str], pods: list[dict[str, Any]], nodes: list[dict[str, Any]]
) -> list[str]:
    """`zones` in the order Karpenter would launch a node for `pod`: under a required zone spread
    (`topologySpreadConstraints` on the zone, `DoNotSchedule`), the zones holding fewest of the pods its selector
    counts come first, so the new node is in the domain that keeps the skew (kubernetes-sigs/karpenter v1.14,
    pkg/controllers/provisioning/scheduling/topology.go: a zone spread narrows the NodeClaim's zone requirement to
    the domains with the least count). Without such a constraint, the order is unchanged."""
    from components.kubeflow.objects import matches

    spec, namespace = pod["spec"], pod["metadata"].get("namespace")
    constraints = [
        c
        for c in spec.get("topologySpreadConstraints") or ()
        if c.get("topologyKey") == ZONE and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
    ]
    if not constraints:
        return zones
    zone_of = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(ZONE) for n in nodes}
    counts = dict.fromkeys(zones, 0)
    for other in pods:
        placed = zone_of.get((other.get("spec") or {}).get("nodeName") or "")
        labels = other["metadata"].get("labels") or {}
        if placed in counts and other["metadata"].get("namespace") == namespace:
            counts[placed] += sum(1 for c in constraints if matches(c.get("labelSelector"), labels))
    return sorted(zones, key=lambda z: (counts[z], zones.index(z)))


class Karpenter:
    """Nodes for unschedulable pods, as the model of Karpenter places them (in the zone a required zone spread
    asks for); pool nodes gone with their pool."""

    #: A pod that still cannot be placed after this many launches for it is left pending (and reported).
    MAX_LAUNCHES = 2

    def __init__(self, api: Api) -> None:
        self.api = api
        self.launches: dict[str, int] = {}
        self.refused: dict[str, str] = {}
        #: NodePools seen in the cluster: only their nodes go when they go (the box's first nodes come before them).
        self.seen: set[str] = set()

    def __call__(self) -> Iterator[str]:
        """One round: the nodes of deleted NodePools terminated, then a node launched for each unschedulable pod
        (one launch per pool per round: the next round sees the new room)."""
        from tests.karpenter_fit import Unschedulable, place

        pools = {p["metadata"]["name"]: p for p in self.api.items("/apis/karpenter.sh/v1/nodepools")}
        self.seen |= set(pools)
        current = self.api.items("/api/v1/nodes")
        yield from self._terminate_orphans(pools, current)
        if not pools:
            return
        zones = sorted({(n["metadata"].get("labels") or {}).get("topology.kubernetes.io/zone", "") for n in current})
        fsx = any(d["metadata"]["name"] == "fsx-csi-node" for d in self.api.items("/apis/apps/v1/daemonsets"))
        launched: set[str] = set()
        every_pod = self.api.items("/api/v1/pods")
        for pod in every_pod:
            if not self._wants_node(pod):
                continue
            meta, uid = pod["metadata"], pod["metadata"]["uid"]
            try:
                landing = place(pod["spec"], list(pools.values()), zones=[z for z in zones if z], fsx=fsx)
            except Unschedulable as error:
                if self.refused.get(uid) != str(error):
                    self.refused[uid] = str(error)
                    yield f"pod {meta['namespace']}/{meta['name']}: no NodePool can launch a node for it: {error}"
                continue
            if landing.pool in launched:
                continue
            done, message = self._launch(pod, landing, pools[landing.pool], zones, every_pod, current)
            if done:
                launched.add(landing.pool)
            yield message

    def _terminate_orphans(self, pools: dict[str, dict[str, Any]], nodes: list[dict[str, Any]]) -> Iterator[str]:
        """The nodes of NodePools seen before and gone now, deleted (Karpenter terminates them with their pool)."""
        for node in nodes:
            pool = (node["metadata"].get("labels") or {}).get("karpenter.sh/nodepool")
            if pool in self.seen and pool not in pools:
                self.api.delete(f"/api/v1/nodes/{node['metadata']['name']}")
                yield f"node {node['metadata']['name']} terminated (NodePool {pool} deleted)"

    def _wants_node(self, pod: dict[str, Any]) -> bool:
        """A pod the scheduler found no room for, not bound, not being deleted, and not given up on."""
        unschedulable = any(
            c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
            for c in (pod.get("status") or {}).get("conditions") or ()
        )
        if pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp") or not unschedulable:
            return False
        return self.launches.get(pod["metadata"]["uid"], 0) < self.MAX_LAUNCHES

    def _launch(
        self,
        pod: dict[str, Any],
        landing: Landing,
        pool: dict[str, Any],
        zones: list[str],
        every_pod: list[dict[str, Any]],
        current: list[dict[str, Any]],
    ) -> tuple[bool, str]:
        """A node of `pool` for `pod`, in the zone a required spread asks for, unless it would pass the pool's
        limits; whether it was launched, and what happened."""
        from engine import nodes as box_nodes

        meta, uid = pod["metadata"], pod["metadata"]["uid"]
        existing = [
            n for n in current if (n["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == landing.pool
        ]
        regions = [(n["metadata"].get("labels") or {}).get("topology.kubernetes.io/region") for n in current]
        instance = landing.instance_types[min(2, len(landing.instance_types) - 1)]
        plan = box_nodes.node_pool_node(
            pool,
            zones=spread_zones(pod, list(landing.zones) or zones, every_pod, current),
            region=next((str(r) for r in regions if r), "us-west-2"),
            instance_type=instance,
            capacity_type=landing.capacity_types[0],
            index=len(existing),
        )
        # A pool's nodes count against its limits; a launch that would pass one does not happen.
        if not box_nodes.within_pool_limits(pool, [*existing, plan.manifest()]):
            self.launches[uid] = self.MAX_LAUNCHES
            return False, f"pod {meta['namespace']}/{meta['name']}: NodePool {landing.pool} is at its limits"
        box_nodes.create_with(self.api, plan)
        self.launches[uid] = self.launches.get(uid, 0) + 1
        where = f"{instance}, {landing.capacity_types[0]}"
        return True, f"node {plan.name} ({where}) for pod {meta['namespace']}/{meta['name']}"


def main() -> int:
    url, ca, cert, key = sys.argv[1:5]
    api = Api(url, ca, cert, key)
    bundle = base64.b64encode(Path(ca).read_bytes()).decode()
    karpenter = Karpenter(api)
    while True:
        try:
            for done in (*cert_manager(api), *ca_injector(api, bundle), *ebs_provisioner(api), *karpenter()):
                print(done, flush=True)
        except requests.RequestException as error:  # the API server restarting: try again next round
            print(f"stand-ins: {error}", flush=True)
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
