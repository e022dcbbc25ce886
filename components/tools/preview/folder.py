"""The preview's output folder: `resources.json`, `manifests/`, `helm/` and `iam/` from a recorded run.

The folder is a contract other tools read (see the package docstring). Writing it is a third of the CPU the preview
spends after registration (the indented JSON and the YAML are serialised in Python), and nothing else the preview
does reads it back, so `write_in_background` writes it in a forked child while the parent runs the checks, the model,
the cost and the report.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from .inventory import HELM_RELEASE_TYPE, Inventory, Recorded

PACKAGE_PREFIX = "eksml:"


#: libyaml's emitter when PyYAML has it (the same YAML, several times faster than the pure-Python one).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump_yaml(documents: Iterable[Any]) -> str:
    """YAML documents with sorted keys in block style, as every file of the folder is written."""
    return yaml.dump_all(list(documents), Dumper=_DUMPER, sort_keys=True, default_flow_style=False, width=120)


def owning_component(inventory: Inventory, resource: Recorded) -> str:
    """The name of the nearest package component above a resource (the file its manifest goes to)."""
    parent = resource.parent
    while parent is not None:
        owner = inventory.by_urn(parent)
        if owner.type.startswith(PACKAGE_PREFIX):
            return owner.name
        parent = owner.parent
    return "stack"


def is_manifest(resource: Recorded) -> bool:
    """Whether a resource is a Kubernetes object the program creates itself (a Helm release is not)."""
    return (
        resource.type.startswith("kubernetes:")
        and resource.type != HELM_RELEASE_TYPE
        and "apiVersion" in resource.inputs
        and "kind" in resource.inputs
    )


def manifest(resource: Recorded) -> dict[str, Any]:
    """A Kubernetes object as written to `manifests/` (without the SDK's internal `__` keys)."""
    return {key: value for key, value in resource.inputs.items() if not key.startswith("__")}


def helm_release(resource: Recorded) -> dict[str, Any]:
    """A Helm release as written to `helm/<release>.yaml`: name, namespace, repo, chart, version and values."""
    inputs = resource.inputs
    repo = (inputs.get("repositoryOpts") or {}).get("repo")
    chart = str(inputs.get("chart"))
    if chart.startswith("oci://"):  # an OCI chart names its registry inside the chart reference
        repo, chart = chart.rsplit("/", 1)
    return {
        "name": inputs.get("name", resource.name),
        "namespace": inputs.get("namespace"),
        "repo": repo,
        "chart": chart,
        "version": inputs.get("version"),
        "values": inputs.get("values") or {},
    }


def _iam_documents(resource: Recorded) -> dict[str, Any]:
    """IAM policy documents a resource carries, keyed by the file name they are written to."""
    documents: dict[str, Any] = {}
    if resource.type == "aws:iam/role:Role" and "assumeRolePolicy" in resource.inputs:
        documents[f"{resource.name}.trust"] = resource.inputs["assumeRolePolicy"]
    if resource.type in {"aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"} and "policy" in resource.inputs:
        documents[resource.name] = resource.inputs["policy"]
    return {name: json.loads(text) if isinstance(text, str) else text for name, text in documents.items()}


def write_preview(inventory: Inventory, out: Path) -> None:
    """Write the preview folder. Only the entries the preview owns are replaced, so `--out .` is harmless."""
    out.mkdir(parents=True, exist_ok=True)
    for entry in ("manifests", "helm", "iam"):
        shutil.rmtree(out / entry, ignore_errors=True)
        (out / entry).mkdir()
    resources = [resource.as_json() for resource in inventory.resources]
    (out / "resources.json").write_text(json.dumps({"resources": resources}, indent=2, sort_keys=True) + "\n")

    manifests: dict[str, list[dict[str, Any]]] = {}
    for resource in inventory.resources:
        if is_manifest(resource):
            manifests.setdefault(owning_component(inventory, resource), []).append(manifest(resource))
        if resource.type == HELM_RELEASE_TYPE:
            release = helm_release(resource)
            (out / "helm" / f"{release['name']}.yaml").write_text(_dump_yaml([release]))
        for name, document in _iam_documents(resource).items():
            (out / "iam" / f"{name}.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    for component, documents in sorted(manifests.items()):
        ordered = sorted(
            documents, key=lambda d: (d["kind"], d.get("metadata", {}).get("namespace") or "", d["metadata"]["name"])
        )
        (out / "manifests" / f"{component}.yaml").write_text(_dump_yaml(ordered))


def write_in_background(inventory: Inventory, out: Path) -> Callable[[], None]:
    """Start writing the preview folder in a forked child; the returned function waits for it and raises OSError
    when the child could not write the folder. Without fork (Windows) the folder is written here and now."""
    if not hasattr(os, "fork"):
        write_preview(inventory, out)
        return lambda: None
    sys.stdout.flush()  # the child exits without flushing: nothing buffered may be written twice, or lost
    sys.stderr.flush()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child, whose exit status the parent checks
        status = 0
        try:
            write_preview(inventory, out)
        except BaseException:  # noqa: BLE001 - any failure: the parent reports it with the child's traceback
            traceback.print_exc()
            sys.stderr.flush()
            status = 1
        os._exit(status)

    def wait() -> None:
        _, status = os.waitpid(child, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise OSError(f"writing the preview folder {out} failed (its traceback is above)")

    return wait
