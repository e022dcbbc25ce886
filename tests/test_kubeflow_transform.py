"""The changes every upstream object gets before Pulumi owns it: no injected or controller-filled fields, no
namespaces on cluster-scoped objects, stable names, the platform's storage, databases kept on on-demand nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.kubeflow import entries, references, render, transform
from components.kubeflow.objects import Scopes, group_of, is_crd, is_webhook_configuration, key, pod_template
from tests.kubeflow_support import template_of

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")


#: Every installable entry at once (the upstream alternatives left out: they duplicate default objects).
EVERYTHING = entries.selected(katib=True, spark=True, hub=True, knative=True, hub_registry=True)


@pytest.fixture(scope="session")
def upstream(render_cache) -> list[dict[str, Any]]:
    rendered = render.render(REFERENCE, EVERYTHING, cache_dir=render_cache)
    return [o for objects in rendered.values() for o in objects]


@pytest.fixture(scope="session")
def cleaned(upstream) -> list[dict[str, Any]]:
    return references.stable_names(transform.cleanup(upstream))


def webhook_client_configs(obj):
    if is_webhook_configuration(obj):
        return [w["clientConfig"] for w in obj["webhooks"]]
    if is_crd(obj):
        return [obj["spec"].get("conversion", {}).get("webhook", {}).get("clientConfig", {})]
    return []


def test_no_ca_bundle_is_left_for_pulumi_to_own(upstream, cleaned):
    assert any("caBundle" in c for o in upstream for c in webhook_client_configs(o))  # upstream ships one
    assert [key(o) for o in cleaned if any("caBundle" in c for c in webhook_client_configs(o))] == []


def test_the_unresolved_jobset_ca_injection_is_dropped_and_resolved_ones_are_kept(cleaned):
    annotations = {o["metadata"]["name"]: (o["metadata"].get("annotations") or {}) for o in cleaned if is_crd(o)}
    assert "cert-manager.io/inject-ca-from" not in annotations["jobsets.jobset.x-k8s.io"]
    jobset = next(o for o in cleaned if is_crd(o) and o["metadata"]["name"] == "jobsets.jobset.x-k8s.io")
    assert len(jobset["spec"]["versions"]) == 1  # so its conversion webhook is never called and needs no CA
    assert annotations["pvcviewers.kubeflow.org"]["cert-manager.io/inject-ca-from"] == "kubeflow/pvcviewer-serving-cert"
    assert "$(" not in json.dumps(annotations)


def test_aggregated_cluster_roles_leave_their_rules_to_the_aggregation_controller(upstream, cleaned):
    # Applied with `rules: []`, every later preview failed with a server-side apply conflict with
    # "clusterrole-aggregation-controller" on .rules, and refresh saw a change (found by the engine tier).
    def aggregated(objects):
        return {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole" and "aggregationRule" in o}

    assert any("rules" in o for o in aggregated(upstream).values())  # upstream ships them
    kept = aggregated(cleaned)
    assert {"kubeflow-view", "kubeflow-edit", "kubeflow-admin"} <= set(kept)
    assert [name for name, o in kept.items() if "rules" in o] == []
    plain = [o for o in cleaned if o["kind"] == "ClusterRole" and "aggregationRule" not in o]
    assert plain
    # An empty list is read back as none, and planned again on every preview; a non-empty one is kept.
    assert [o["metadata"]["name"] for o in plain if o.get("rules") == []] == []
    assert "jupyter-web-app-kubeflow-notebook-ui-admin" in {o["metadata"]["name"] for o in plain}
    assert sum(1 for o in plain if o.get("rules")) > 20


def test_cluster_scoped_objects_carry_no_namespace(upstream, cleaned):
    scopes = Scopes(cleaned)

    def misplaced(objects):
        return sorted(
            str(key(o))
            for o in objects
            if "namespace" in o["metadata"] and not scopes.namespaced(group_of(o["apiVersion"]), o["kind"])
        )

    assert {k.split(" ")[0] for k in misplaced(upstream)} == {
        "ClusterRole.rbac.authorization.k8s.io",
        "ClusterRoleBinding.rbac.authorization.k8s.io",
        "ClusterTrainingRuntime.trainer.kubeflow.org",
        "DecoratorController.metacontroller.k8s.io",
    }
    assert misplaced(cleaned) == []


def test_controller_filled_secrets_are_exactly_the_empty_ones_and_stay_empty(upstream, cleaned, render_cache):
    data_cache = render.render(REFERENCE, [entries.TRAINER_DATA_CACHE], cache_dir=render_cache)
    empty = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in [*upstream, *data_cache[entries.TRAINER_DATA_CACHE.path]]
        if o["kind"] == "Secret" and not o.get("data") and not o.get("stringData")
    }
    assert empty == transform.CONTROLLER_FILLED_SECRETS
    for obj in cleaned:
        if obj["kind"] == "Secret" and (obj["metadata"]["namespace"], obj["metadata"]["name"]) in empty:
            assert "data" not in obj
            assert "stringData" not in obj


def test_clearing_a_controller_filled_secret_drops_data_a_render_might_carry():
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": "knative-serving", "name": "webhook-certs"},
        "data": {"tls.crt": "eA=="},
    }
    (cleared,) = transform.clear_controller_filled_secrets([secret])
    assert "data" not in cleared
    assert secret["data"]


def test_no_generated_name_keeps_its_hash_suffix(upstream, cleaned):
    def hashed(objects):
        return sorted(
            o["metadata"]["name"]
            for o in objects
            if o["kind"] in {"ConfigMap", "Secret"} and references._HASH_SUFFIX.match(o["metadata"]["name"])
        )

    assert "oauth2-proxy-h675gf55ht" in hashed(upstream)
    assert hashed(cleaned) == []
    names = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in cleaned}
    assert ("Secret", "oauth2-proxy", "oauth2-proxy") in names
    assert ("ConfigMap", "kubeflow", "jupyter-web-app-config") in names


def test_every_reference_that_resolved_upstream_still_resolves(upstream, cleaned):
    def resolved(objects):
        present = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects}
        return {
            str(key(o)): sorted(
                n for kind, n in references.config_references(o) if (kind, o["metadata"]["namespace"], n) in present
            )
            for o in objects
            if pod_template(o) is not None
        }

    before, after = resolved(upstream), resolved(cleaned)
    assert {k: len(v) for k, v in before.items()} == {k: len(v) for k, v in after.items()}
    assert sum(len(v) for v in after.values()) > 30


def test_a_hashed_name_mentioned_outside_a_pod_spec_is_an_error():
    objects = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": "a", "name": "settings-5t624ft8b8"},
            "data": {},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": "a", "name": "other"},
            "data": {"ref": "settings-5t624ft8b8"},
        },
    ]
    with pytest.raises(ValueError, match="settings-5t624ft8b8"):
        references.stable_names(objects)


def test_a_config_change_rolls_the_workloads_that_read_it(cleaned):
    def digest(objects, name):
        deployment = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == name)
        return template_of(deployment)["metadata"]["annotations"][references.CONFIG_DIGEST]

    base = references.config_digests(cleaned)
    changed = transform.replace(cleaned, {("ConfigMap", "auth", "dex"): lambda o: {**o, "data": {"config.yaml": "x"}}})
    changed = references.config_digests(changed)
    assert digest(base, "dex") != digest(changed, "dex")
    assert digest(base, "oauth2-proxy") == digest(changed, "oauth2-proxy")


def test_every_claim_uses_the_platforms_storage_class(cleaned):
    changed = transform.storage_class(cleaned, "gp3")
    claims = [o["spec"] for o in changed if o["kind"] == "PersistentVolumeClaim"]
    claims += [
        t["spec"] for o in changed if o["kind"] == "StatefulSet" for t in o["spec"].get("volumeClaimTemplates") or ()
    ]
    assert len(claims) == 5
    assert {c["storageClassName"] for c in claims} == {"gp3"}


def test_databases_and_object_stores_run_on_demand_and_are_never_disrupted(cleaned):
    placed = transform.stateful_placement(cleaned)
    pinned = sorted(
        f"{o['metadata']['namespace']}/{o['metadata']['name']}"
        for o in placed
        if pod_template(o)
        and template_of(o)["spec"].get("nodeSelector", {}).get(transform.CAPACITY_TYPE) == "on-demand"
    )
    assert pinned == [
        "kubeflow-user-example-com/model-registry-db",
        "kubeflow/katib-mysql",
        "kubeflow/model-catalog-postgres",
        "kubeflow/mysql",
        "kubeflow/seaweedfs",
    ]
    for obj in placed:
        if f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}" in pinned and pod_template(obj):
            assert template_of(obj)["metadata"]["annotations"][transform.DO_NOT_DISRUPT] == "true"


def test_the_model_registry_moves_whole_to_a_team_namespace(cleaned):
    registry = [o for o in cleaned if o["metadata"].get("namespace") == "kubeflow-user-example-com"]
    moved = transform.retarget_namespace(registry, "kubeflow-user-example-com", "vision")
    text = json.dumps(moved)
    assert "kubeflow-user-example-com" not in text
    assert "model-registry-service.vision.svc.cluster.local" in text
    assert {o["metadata"]["namespace"] for o in moved} == {"vision"}


def test_istios_validation_webhook_is_owned_as_istiod_leaves_it_and_intercepts_none_of_kubeflows_objects(
    upstream, cleaned
):
    from components.kubeflow.relations import Relations

    def validator(objects):
        return next(
            o
            for o in objects
            if o["kind"] == "ValidatingWebhookConfiguration" and o["metadata"]["name"] == "istio-validator-istio-system"
        )

    assert {w["failurePolicy"] for w in validator(upstream)["webhooks"]} == {"Ignore"}  # upstream fails open
    assert {w["failurePolicy"] for w in validator(cleaned)["webhooks"]} == {"Fail"}  # what istiod turns it into
    istio_objects = [o for o in cleaned if group_of(o["apiVersion"]).endswith(".istio.io")]
    assert len(istio_objects) > 10
    relations = Relations(cleaned)
    assert [key(o) for o in istio_objects if relations.intercepts(validator(cleaned), o)] == []


def test_the_pods_that_never_call_the_api_get_no_service_account_token(upstream):
    from components.kubeflow import tokens

    changed = tokens.without_api_tokens(upstream)
    mounts = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): template_of(o)["spec"].get(
            "automountServiceAccountToken"
        )
        for o in changed
        if pod_template(o) is not None
    }
    # every listed workload exists upstream (a rename would silently give it its token back) and mounts none now
    assert {mounts[workload] for workload in tokens.NO_API_ACCESS} == {False}
    # upstream mounts them, and nothing else is touched
    assert all(
        template_of(o)["spec"].get("automountServiceAccountToken") is None
        for o in upstream
        if (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) in tokens.NO_API_ACCESS
    )
    assert sum(value is False for value in mounts.values()) == len(tokens.NO_API_ACCESS) + sum(
        template_of(o)["spec"].get("automountServiceAccountToken") is False
        for o in upstream
        if pod_template(o) is not None
    )
