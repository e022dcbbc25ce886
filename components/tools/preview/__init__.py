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
import sys
import time
from collections import Counter
from collections.abc import Mapping
from datetime import date
from pathlib import Path

import pulumi

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
from .folder import helm_release, is_manifest, manifest, owning_component, write_in_background
from .inventory import HELM_RELEASE_TYPE, Inventory, Recorded


def stack_view(inventory: Inventory) -> StackView:
    """What the model of the running platform reads, straight from the recorded run (no folder read back)."""
    manifests = [
        (f"manifests/{owning_component(inventory, r)}.yaml", manifest(r)) for r in inventory.resources if is_manifest(r)
    ]
    releases = [helm_release(r) for r in inventory.resources if r.type == HELM_RELEASE_TYPE]
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


def _parser() -> argparse.ArgumentParser:
    """The command line of `python -m components.preview`."""
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
    return parser


def record(args: argparse.Namespace) -> tuple[str, bool, Inventory] | int:
    """Run the stack's program (the platform's, or another program's own __main__.py) under mocks: its project name,
    whether it is the platform, and what it registered; or the exit status when it cannot run, its reason printed."""
    from . import program as other_program  # imported late: it builds on this module

    try:
        project = read_project_name(args.project_dir)
        if other_program.is_platform(project):
            return project, True, run_preview(args.project_dir, args.stack, kubeflow_tree=args.kubeflow_tree)
        # another program using the package (a team stack): its own __main__.py
        config, secret_keys = read_stack_config(args.project_dir, project, args.stack)
        references = other_program.read_stack_references(args.stack_reference)
        inventory = other_program.run_program(args.project_dir, project, args.stack, config, secret_keys, references)
        return project, False, inventory
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


def platform_reports(args: argparse.Namespace, inventory: Inventory) -> tuple[list[str], str, bool, Estimate]:
    """What the preview says of the platform's stack beyond its resources: the system nodes' room, the cost and the
    placeholders left (printed before the policies), the model's verdict (after them), whether the model found a
    problem, and the cost estimate the report draws."""
    model, problems = platform_model(inventory, args.charts or default_charts(args.project_dir))
    parsed, raw_config, _ = load_stack(args.project_dir, args.stack)
    cost = estimate(parsed, PINNED, on=date.today(), platform=model)
    lines = [capacity_report(parsed), f"Cost: {headline(cost)}"]
    if warnings := placeholder_report(parsed, raw_config):
        lines.append(warnings)
    verdict, broken = model_report(model, problems)
    return lines, verdict, broken, cost


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    overrides = json.loads(args.policy_config.read_text()) if args.policy_config else {}
    from . import destroy_estimate, report  # imported late: they build on this module

    if args.out.is_dir():  # a failed preview leaves no report of an earlier one
        (args.out / report.REPORT).unlink(missing_ok=True)
    started = time.perf_counter()
    recorded = record(args)
    if isinstance(recorded, int):
        return recorded
    project, platform, inventory = recorded
    written = write_in_background(inventory, args.out)  # the folder is written while the rest is worked out
    violations = policy_rules.evaluate(policy_resources(inventory), overrides)
    before, verdict, broken, cost = platform_reports(args, inventory) if platform else ([], "", False, None)
    page = report.render(
        inventory, project=project, stack=args.stack, cost=cost, destroy=destroy_estimate.estimate(inventory)
    )
    written()
    print(summary(inventory, stack=args.stack, out=args.out, seconds=time.perf_counter() - started))
    for line in before:
        print(line)
    print(policy_report(violations))
    if verdict:
        print(verdict)
    report.write(args.out, page)
    return 1 if broken or any(v.enforcement == "mandatory" for v in violations) else 0
