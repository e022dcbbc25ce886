"""The box's CA injector (engine/standins.py), against a real API server: it reads every CRD and webhook
configuration as metadata only, each round, and injects the box's CA into exactly those that ask for it (a
cert-manager annotation, istiod's revision label, a controller that writes its own), in a conversion webhook and in
each webhook of a configuration. The full objects of all the stack's CRDs are megabytes, which listing them each
second made the API server encode."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cluster import Box
from engine.kube import Kube
from tests.conftest import REPO

pytestmark = [pytest.mark.engine, pytest.mark.subprocess]

ANNOTATION = {"cert-manager.io/inject-ca-from": "team/serving-cert"}


def crd(plural: str, annotations: dict[str, str]) -> dict[str, Any]:
    client = {"service": {"name": "webhook", "namespace": "team", "path": "/convert"}}
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.org", "annotations": annotations},
        "spec": {
            "group": "example.org",
            "names": {"plural": plural, "singular": plural[:-1], "kind": plural[:-1].title()},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema},
                {"name": "v2", "served": True, "storage": False, "schema": schema},
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": client},
            },
        },
    }


def webhooks(
    name: str, *, annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    hook = {
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "clientConfig": {"service": {"name": "webhook", "namespace": "team", "path": "/validate"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
        "webhooks": [{**hook, "name": f"first.{name}.example.org"}, {**hook, "name": f"second.{name}.example.org"}],
    }


#: One round of the injector inside the box (each list it asks for recorded), then a metadata-only list of the CRDs:
#: what it printed, as JSON.
ROUND = """
import json, sys
from engine.standins import Api, ca_injector
url, ca, cert, key, bundle = sys.argv[1:6]
api = Api(url, ca, cert, key)
lists = []
full_list = api.items
def recorded(path, *, metadata_only=False):
    lists.append([path, metadata_only])
    return full_list(path, metadata_only=metadata_only)
api.items = recorded
done = list(ca_injector(api, bundle))
api.items = full_list
listed = api.items("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", metadata_only=True)
print(json.dumps({"done": done, "listed": listed, "lists": lists}))
"""


@pytest.fixture(scope="module")
def box(engine_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Box, Kube]]:
    box = Box(engine_bin, tmp_path_factory.mktemp("ca-injector-box"))
    try:
        kube = box.start_api()
        yield box, kube
    finally:
        box.stop()


def one_round(box: Box) -> dict[str, Any]:
    assert box.pki is not None
    pki = box.pki.folder
    bundle = base64.b64encode(box.pki.ca_cert.read_bytes()).decode()
    argv = [sys.executable, "-c", ROUND, "https://127.0.0.1:6443", str(box.pki.ca_cert)]
    argv += [str(pki / "admin.crt"), str(pki / "admin.key"), bundle]
    done = box.run(argv, env={"PYTHONPATH": str(REPO)}, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_injector_fills_only_what_asks_and_reads_every_list_as_metadata(box: tuple[Box, Kube]) -> None:
    the_box, kube = box
    kube.apply(
        [
            crd("asks", ANNOTATION),
            crd("silents", {}),
            webhooks("annotated", annotations=ANNOTATION),
            webhooks("istio-revision", labels={"istio.io/rev": "default"}),
            webhooks("jobset-validating-webhook-configuration"),
            webhooks("unasked"),
        ]
    )
    first = one_round(the_box)
    assert the_box.pki is not None
    bundle = base64.b64encode(the_box.pki.ca_cert.read_bytes()).decode()

    def conversion_bundle(name: str) -> str | None:
        spec = json.loads(kube.kubectl("get", "crd", name, "-o", "json"))["spec"]
        return spec["conversion"]["webhook"]["clientConfig"].get("caBundle")

    def hook_bundles(name: str) -> list[str | None]:
        config = json.loads(kube.kubectl("get", "validatingwebhookconfiguration", name, "-o", "json"))
        return [w["clientConfig"].get("caBundle") for w in config["webhooks"]]

    assert conversion_bundle("asks.example.org") == bundle
    assert conversion_bundle("silents.example.org") is None
    for name in ("annotated", "istio-revision", "jobset-validating-webhook-configuration"):
        assert hook_bundles(name) == [bundle, bundle], name
    assert hook_bundles("unasked") == [None, None]
    assert sorted(first["done"]) == sorted(
        [
            "customresourcedefinitions asks.example.org: CA injected",
            "validatingwebhookconfigurations annotated: CA injected",
            "validatingwebhookconfigurations istio-revision: CA injected",
            "validatingwebhookconfigurations jobset-validating-webhook-configuration: CA injected",
        ]
    )
    # Every list the injector asked for was metadata only, and the API server sent no CRD's spec.
    assert len(first["lists"]) == 4  # webhook configurations of both kinds, CRDs, APIServices
    assert [metadata_only for _, metadata_only in first["lists"]] == [True] * 4
    names = {item["metadata"]["name"] for item in first["listed"]}
    assert {"asks.example.org", "silents.example.org"} <= names
    assert all(set(item) <= {"kind", "apiVersion", "metadata"} for item in first["listed"])
    # What has its bundle is left alone the next round.
    assert one_round(the_box)["done"] == []
