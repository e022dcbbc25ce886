"""Offline preview: run the real stack program under mocks and write down everything it would create.

    python -m components.preview --stack dev --out build/preview/dev

The output folder is a contract other tools read (see README, "Offline preview"):

- `resources.json`: `{"resources": [...]}` with urn, type, name, parent, inputs (secrets redacted), dependencies,
  protect, retain_on_delete, deleted_with;
- `manifests/<component>.yaml`: every Kubernetes object the program creates itself;
- `helm/<release>.yaml`: name, namespace, repo, chart, version, values of every Helm release;
- `iam/<name>.json`: every IAM trust and permission policy document;
- `report.html`: the same run as pictures (the parts and their dependencies, the idle cost against each pool's
  ceiling, the destroy timeline), one page that loads nothing (`report.py`).

It then runs the platform's policy rules (`components.policy.rules`, the same code as the CrossGuard pack in
`policies/`) over what it recorded and prints a table of violations.

Exit status: 0 on success; 1 when a mandatory policy is violated (the folder is still written); 2 when the stack
configuration is invalid (the problems go to stderr and nothing is written); 3 when the program creates something
the provider or AWS would refuse (a name past its type's limit, a second access entry for the cluster's creator), as
`pulumi preview` or `pulumi up` would fail. A preview that fails removes the `report.html` of an earlier one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pulumi
import yaml

from ... import aws_names
from ...config.errors import ConfigError
from ...kubeflow.fetch import TreeError
from ...platform.config import PlatformConfig
from ...policy import rules as policy_rules
from ..charts import FETCH_COMMAND, default_charts
from ..cluster_model import Platform, Problem, StackView, check_views
from ..cost import PINNED, Estimate, estimate, headline
from ..preflight.placeholders import placeholders
from ..stack_files import load_stack, read_project_name, read_stack_config, unset_secrets
from . import mocks
from .inventory import HELM_RELEASE_TYPE, Inventory, Recorded

PACKAGE_PREFIX = "eksml:"


# --------------------------------------------------------------------------------------------------- writing


#: libyaml's emitter when PyYAML has it (the same YAML, several times faster than the pure-Python one).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump_yaml(documents: Iterable[Any]) -> str:
    return yaml.dump_all(list(documents), Dumper=_DUMPER, sort_keys=True, default_flow_style=False, width=120)


def _owning_component(inventory: Inventory, resource: Recorded) -> str:
    """The name of the nearest package component above a resource (the file its manifest goes to)."""
    parent = resource.parent
    while parent is not None:
        owner = inventory.by_urn(parent)
        if owner.type.startswith(PACKAGE_PREFIX):
            return owner.name
        parent = owner.parent
    return "stack"


def _is_manifest(resource: Recorded) -> bool:
    return (
        resource.type.startswith("kubernetes:")
        and resource.type != HELM_RELEASE_TYPE
        and "apiVersion" in resource.inputs
        and "kind" in resource.inputs
    )


def _manifest(resource: Recorded) -> dict[str, Any]:
    return {key: value for key, value in resource.inputs.items() if not key.startswith("__")}


def _helm_release(resource: Recorded) -> dict[str, Any]:
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
        if _is_manifest(resource):
            manifests.setdefault(_owning_component(inventory, resource), []).append(_manifest(resource))
        if resource.type == HELM_RELEASE_TYPE:
            release = _helm_release(resource)
            (out / "helm" / f"{release['name']}.yaml").write_text(_dump_yaml([release]))
        for name, document in _iam_documents(resource).items():
            (out / "iam" / f"{name}.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    for component, documents in sorted(manifests.items()):
        ordered = sorted(
            documents, key=lambda d: (d["kind"], d.get("metadata", {}).get("namespace") or "", d["metadata"]["name"])
        )
        (out / "manifests" / f"{component}.yaml").write_text(_dump_yaml(ordered))


def stack_view(inventory: Inventory) -> StackView:
    """What the model of the running platform reads, straight from the recorded run (no folder read back)."""
    manifests = [
        (f"manifests/{_owning_component(inventory, r)}.yaml", _manifest(r))
        for r in inventory.resources
        if _is_manifest(r)
    ]
    releases = [_helm_release(r) for r in inventory.resources if r.type == HELM_RELEASE_TYPE]
    return StackView([r.as_json() for r in inventory.resources], manifests, releases)


def platform_model(inventory: Inventory, charts: Path | None) -> tuple[Platform, list[Problem]]:
    """The model of the platform this stack runs, and the rules it breaks."""
    return check_views([stack_view(inventory)], charts)


def model_report(platform: Platform, problems: list[Problem]) -> tuple[str, bool]:
    """The model's verdict on the platform this stack runs, and whether it found a problem."""
    lines = [
        f"  not judged: the pods of Helm release {name} ({why})" for name, why in sorted(platform.unrendered.items())
    ]
    if platform.unrendered:
        lines.append(
            "  not judged: each node's agents and device plugins, which those releases install "
            f"(`{FETCH_COMMAND}` puts the pinned charts in the cache, or give --charts)"
        )
    if not platform.vpc.known:
        lines.append(f"  {platform.vpc.describe()}")
    lines += [f"  {problem}" for problem in problems]
    verdict = "every pod lands, gets its devices and survives node loss"
    if platform.unrendered:  # the verdict covers only what was judged: say so where it is read
        verdict = (
            f"every judged pod lands, gets its devices and survives node loss ({len(platform.unrendered)} Helm "
            "release(s) and the node agents not judged: see below)"
        )
    head = f"Platform model: {len(platform.workloads)} workloads on {len(platform.nodes)} kinds of node, " + (
        f"{len(problems)} problem(s)" if problems else verdict
    )
    return "\n".join([head, *lines]), bool(problems)


# --------------------------------------------------------------------------------------------------- summary


def summary(inventory: Inventory, *, stack: str, out: Path, seconds: float) -> str:
    lines = [f"Offline preview of stack '{stack}': {len(inventory.resources)} resources", ""]
    children: dict[str | None, list[Recorded]] = {}
    for resource in inventory.resources:
        children.setdefault(resource.parent, []).append(resource)

    def walk(parent: str | None, depth: int) -> None:
        for resource in sorted(children.get(parent, []), key=lambda r: (r.type, r.name)):
            flags = "".join(
                f" [{flag}]"
                for flag, on in (("protect", resource.protect), ("retain", resource.retain_on_delete))
                if on
            )
            lines.append(f"{'  ' * depth}{resource.name} ({resource.type}){flags}")
            walk(resource.urn, depth + 1)

    walk(None, 1)
    lines += ["", "Resources by type:"]
    for type_, count in sorted(Counter(r.type for r in inventory.resources).items()):
        lines.append(f"  {count:4d}  {type_}")
    if inventory.stack_outputs:
        lines += ["", "Outputs:"]
        for key, value in sorted(inventory.stack_outputs.items()):
            lines.append(f"  {key}: {json.dumps(value, sort_keys=True)}")
    lines += ["", f"Wrote {out} in {seconds:.2f} s"]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------- main


def policy_resources(inventory: Inventory) -> list[policy_rules.Resource]:
    """The recorded resources as the policy rules see them (the engine gives policies the same properties)."""
    return [
        policy_rules.Resource(
            urn=r.urn, type=r.type, name=r.name, props=r.inputs, dependencies=frozenset(r.dependencies)
        )
        for r in inventory.resources
    ]


def policy_report(violations: list[policy_rules.Violation]) -> str:
    if not violations:
        return f"Policies: {len(policy_rules.RULES)} rules, no violations"
    lines = [f"Policies: {len(violations)} violation(s)", f"  {'level':<10} {'rule':<34} message"]
    for v in violations:
        lines.append(f"  {v.enforcement:<10} {v.rule:<34} {v.message}")
    return "\n".join(lines)


def run_preview(project_dir: Path, stack: str, *, kubeflow_tree: Path | None = None) -> Inventory:
    """Parse the stack's config, then run the real program under mocks. Raises ConfigError on bad config, and
    TreeError when Kubeflow is on and its pinned tree is missing or altered."""
    from ...platform.entry import program  # imported late: importing it registers nothing, but keeps --help fast

    # fail before anything is registered
    parsed, config, secret_keys = load_stack(project_dir, stack, kubeflow_tree=kubeflow_tree)
    return mocks.run(
        program, project=parsed.project, stack=stack, region=parsed.region, config=config, secret_keys=secret_keys
    )


def placeholder_report(config: PlatformConfig, raw_config: Mapping[str, str] | None = None) -> str:
    """A warning per value left as an example's placeholder (the preflight fails on them), and per secret the config
    names that the stack does not set."""
    lines = [f"warning: {p.key}: {p.value} is {p.why}; replace it" for p in placeholders(config)]
    lines += [
        f"warning: {key} is not set (a client secret the Kubeflow config names): pulumi up stops until "
        f"`pulumi config set --secret {key} ...`"
        for key in unset_secrets(raw_config or {})
    ]
    return "\n".join(lines)


def capacity_report(config: PlatformConfig) -> str:
    """The system node group's load and room, and a warning when losing a node would leave controllers Pending."""
    capacity = config.system_capacity
    warning = capacity.warning()
    return capacity.summary() + (f"\nwarning: cluster.systemNodeGroup: {warning}" if warning else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.preview", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="stack name; reads Pulumi.<stack>.yaml")
    parser.add_argument("--out", required=True, type=Path, help="folder to write the preview to")
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="folder with Pulumi.yaml (default: .)")
    parser.add_argument(
        "--policy-config",
        type=Path,
        help=(
            'JSON policy pack config, as for `pulumi preview --policy-pack-config` (e.g. {"no-latest-images": '
            '"advisory"})'
        ),
    )
    parser.add_argument(
        "--stack-reference",
        action="append",
        default=[],
        metavar="ORG/PROJECT/STACK=FILE",
        help="recorded outputs (JSON) of a stack the program references, e.g. a team stack's platform; repeatable",
    )
    parser.add_argument(
        "--kubeflow-tree",
        type=Path,
        help="read Kubeflow from this verified copy of the pinned tree instead of the fetched one "
        "(`python -m components.kubeflow fetch` fills the cache)",
    )
    parser.add_argument(
        "--charts",
        type=Path,
        help="folder of the pinned upstream charts (<chart>-<version>) the model of the running platform renders "
        f"(default: the ones `{FETCH_COMMAND}` put in the per-user cache, else ../shared/reference/charts beside the "
        "project, when it is there)",
    )
    args = parser.parse_args(argv)
    overrides = json.loads(args.policy_config.read_text()) if args.policy_config else {}
    # imported late: they build on this module
    from . import destroy_estimate, report
    from . import program as other_program

    if args.out.is_dir():  # a failed preview leaves no report of an earlier one
        (args.out / report.REPORT).unlink(missing_ok=True)

    started = time.perf_counter()
    platform = True
    try:
        project = read_project_name(args.project_dir)
        platform = other_program.is_platform(project)
        if platform:
            inventory = run_preview(args.project_dir, args.stack, kubeflow_tree=args.kubeflow_tree)
        else:  # another program using the package (a team stack): its own __main__.py
            config, secret_keys = read_stack_config(args.project_dir, project, args.stack)
            references = other_program.read_stack_references(args.stack_reference)
            inventory = other_program.run_program(
                args.project_dir, project, args.stack, config, secret_keys, references
            )
    except ConfigError as error:
        print(f"Stack '{args.stack}': {error}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, TreeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except pulumi.RunError as error:  # the program refused to run (its own config errors)
        print(f"Stack '{args.stack}': {error}", file=sys.stderr)
        return 2
    except (aws_names.NameTooLong, mocks.RefusedByAws) as error:  # what the provider's Check or AWS would refuse
        print(f"error: {error}", file=sys.stderr)
        return 3
    write_preview(inventory, args.out)
    violations = policy_rules.evaluate(policy_resources(inventory), overrides)
    print(summary(inventory, stack=args.stack, out=args.out, seconds=time.perf_counter() - started))
    broken = False
    cost: Estimate | None = None
    if platform:
        model, problems = platform_model(inventory, args.charts or default_charts(args.project_dir))
        parsed, raw_config, _ = load_stack(args.project_dir, args.stack)
        print(capacity_report(parsed))
        cost = estimate(parsed, PINNED, on=date.today(), platform=model)
        print(f"Cost: {headline(cost)}")
        if warnings := placeholder_report(parsed, raw_config):
            print(warnings)
    print(policy_report(violations))
    if platform:
        verdict, broken = model_report(model, problems)
        print(verdict)
    page = report.render(
        inventory, project=project, stack=args.stack, cost=cost, destroy=destroy_estimate.estimate(inventory)
    )
    report.write(args.out, page)
    return 1 if broken or any(v.enforcement == "mandatory" for v in violations) else 0
