"""The SDK floor of an offline preview: the same resources registered under Pulumi's own mocks and nothing else.

    python benchmarks/sdk_floor.py build/preview/dev/resources.json [--project eks-ml-platform --stack dev]

It reads a preview's `resources.json` and, in one run under `pulumi.runtime.set_mocks`, registers every resource in
it again with the SDK's typed class for its type (`pulumi_aws.iam.Role`, `pulumi_kubernetes.apps.v1.Deployment`,
`pulumi_kubernetes.apiextensions.CustomResource` for a custom resource, `pulumi.ComponentResource` for the
package's components, `pulumi.dynamic.Resource` for a dynamic one), with the inputs, parent and dependencies the
preview recorded. The mocks answer as the preview's do where it matters to the SDK: a resource's outputs are its
inputs, a CustomResourceDefinition's its identity only. The process is tuned as the preview's is (no cyclic
collector, no interpreter teardown), so the two differ only in the work the preview does beyond registration: its
own program's logic, its checks, the output folder, the model, the cost and the report.

It prints `floor: <n> resources registered in <s> s` and exits 0, or names the first resource it cannot register.
"""

from __future__ import annotations

import gc
import os
import sys

gc.disable()  # as `python -m components.preview` does (components/preview/__main__.py)

import argparse  # noqa: E402 - after the collector is off, so imports run without it too
import importlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pulumi  # noqa: E402
import pulumi.dynamic  # noqa: E402
from pulumi.runtime.stack import run_pulumi_func  # noqa: E402
from pulumi.runtime.sync_await import _sync_await  # noqa: E402

_CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
_CRD_OUTPUTS = ("apiVersion", "kind", "metadata")  # what the preview's mocks answer for a CRD (preview/answers.py)
#: The pulumi_kubernetes module of an API group (the SDK names a module for the group's first word).
_K8S_GROUP_MODULE = {"": "core", "helm.sh": "helm"}
_PACKAGE_MODULE = {
    "aws": "pulumi_aws",
    "kubernetes": "pulumi_kubernetes",
    "random": "pulumi_random",
    "eks": "pulumi_eks",
}


class FloorMocks(pulumi.runtime.Mocks):
    """Each resource's outputs are its inputs (a CRD's: its identity); no data source is called."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if not args.custom and args.typ != "eks:index:Cluster":
            return None, {}
        if args.typ == _CRD:
            return f"{args.name}-id", {key: args.inputs[key] for key in _CRD_OUTPUTS if key in args.inputs}
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


class _NoOp(pulumi.dynamic.ResourceProvider):
    """The provider of the floor's dynamic resources (pickled by the SDK as any dynamic provider is)."""


class _Dynamic(pulumi.dynamic.Resource):
    """A dynamic resource of the type the preview records (`pulumi-python:dynamic:Resource`)."""


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def typed_class(type_: str) -> type | None:
    """The SDK's class for a resource type token, or None when the type is a custom Kubernetes kind."""
    package, module, name = type_.split(":")
    if package == "pulumi" and module == "providers":
        return importlib.import_module(_PACKAGE_MODULE[name]).Provider  # type: ignore[no-any-return]
    root = importlib.import_module(_PACKAGE_MODULE[package])
    if package == "kubernetes":
        group, _, version = module.rpartition("/")
        path = [_K8S_GROUP_MODULE.get(group, group.split(".")[0]), version]
    else:
        path = [] if module.startswith("index") else [module.split("/")[0]]
    try:
        owner = importlib.import_module(".".join([root.__name__, *path]))
        return getattr(owner, name)  # type: ignore[no-any-return]
    except (ImportError, AttributeError):
        if package == "kubernetes":
            return None
        raise


def _parameters(cls: type) -> set[str]:
    init: Any = getattr(cls, "_internal_init", cls)  # a class's own signature is its __init__'s
    return set(inspect.signature(init).parameters)


def register(recorded: dict[str, Any], made: dict[str, pulumi.Resource], classes: dict[str, Any]) -> pulumi.Resource:
    """Register one recorded resource again with its typed class, its inputs, parent and dependencies."""
    type_, name, inputs = recorded["type"], recorded["name"], recorded["inputs"]
    depends_on = [made[urn] for urn in recorded["dependencies"] if urn in made]
    opts = pulumi.ResourceOptions(
        parent=made.get(recorded["parent"] or ""),
        depends_on=depends_on,
        protect=recorded["protect"],
        retain_on_delete=recorded["retain_on_delete"],
    )
    if type_.startswith("eksml:"):
        return pulumi.ComponentResource(type_, name, None, opts)
    if type_ == "pulumi-python:dynamic:Resource":
        return _Dynamic(_NoOp(), name, dict(inputs), opts)
    if type_ not in classes:
        cls = typed_class(type_)
        classes[type_] = (cls, _parameters(cls) if cls else set())
    cls, parameters = classes[type_]
    if cls is None:  # a kind of a CRD: the SDK's generic custom resource
        kwargs = {_snake(key): value for key, value in inputs.items() if key not in ("apiVersion", "kind")}
        return pulumi_kubernetes_custom(name, inputs["apiVersion"], inputs["kind"], kwargs, opts)
    kwargs = {_snake(key): value for key, value in inputs.items() if _snake(key) in parameters}
    return cls(name, opts=opts, **kwargs)  # type: ignore[no-any-return]


def pulumi_kubernetes_custom(
    name: str, api_version: str, kind: str, fields: dict[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.Resource:
    from pulumi_kubernetes.apiextensions import CustomResource

    return CustomResource(name, api_version=api_version, kind=kind, opts=opts, **fields)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("resources", type=Path, help="a preview's resources.json")
    parser.add_argument("--project", default="eks-ml-platform")
    parser.add_argument("--stack", default="dev")
    args = parser.parse_args()
    started = time.perf_counter()
    recorded = json.loads(args.resources.read_text())["resources"]
    pulumi.runtime.set_mocks(FloorMocks(), project=args.project, stack=args.stack, preview=True)
    made: dict[str, pulumi.Resource] = {}
    classes: dict[str, Any] = {}

    def program() -> None:
        for entry in recorded:
            if "$eks:index:Cluster$" in entry["urn"]:  # pulumi-eks's own child: the preview's mocks record it, the
                continue  # SDK never registers it (the remote component's provider does)
            try:
                made[entry["urn"]] = register(entry, made, classes)
            except Exception as error:  # noqa: BLE001 - any failure: name the resource, then stop
                raise SystemExit(f"cannot register {entry['urn']}: {type(error).__name__}: {error}") from None

    _sync_await(run_pulumi_func(program))
    print(f"floor: {len(made)} resources registered in {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
