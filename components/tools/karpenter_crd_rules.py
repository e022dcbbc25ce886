"""Derive the value rules stack config shares with the pinned Karpenter CRDs (`components/karpenter/crd_rules.json`).

The NodePool and EC2NodeClass CRDs state what the API server accepts: patterns, lengths, enums, bounds, and CEL rules
(`x-kubernetes-validations`). Stack config checks the same fields before anything is deployed, so that `pulumi up`
does not fail on them. This tool reads the CRDs and writes, for each field config checks, the facts it uses: the
schema's constraints as they are, and what the CEL rules say in a form Python can apply (reserved label domains and
their exceptions, restricted keys, which operators need which values). A CEL rule of a shape this tool does not know
stops it: a CRD bump that adds or changes a rule on one of these fields is then looked at, not missed. The tests run
it against the pinned CRDs and compare with the shipped file.

    python -m components.tools.karpenter_crd_rules --crds DIR            # exit 1 if the shipped file differs
    python -m components.tools.karpenter_crd_rules --crds DIR --write    # rewrite it

DIR holds the CRDs as karpenter-provider-aws ships them (`pkg/apis/crds/` at the pinned tag).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .. import karpenter, versions

NODEPOOL = "karpenter.sh_nodepools.yaml"
EC2NODECLASS = "karpenter.k8s.aws_ec2nodeclasses.yaml"

#: Each rule's name, the CRD it is read from and the field's path in the v1 schema (`[]`: every item of a list, `*`:
#: every value of a map).
FIELDS: Mapping[str, tuple[str, str]] = {
    "nodePool.weight": (NODEPOOL, "spec.weight"),
    "nodePool.limit": (NODEPOOL, "spec.limits.*"),
    "nodePool.consolidateAfter": (NODEPOOL, "spec.disruption.consolidateAfter"),
    "nodePool.consolidationPolicy": (NODEPOOL, "spec.disruption.consolidationPolicy"),
    "nodePool.budgets": (NODEPOOL, "spec.disruption.budgets"),
    "nodePool.budgetNodes": (NODEPOOL, "spec.disruption.budgets[].nodes"),
    "nodePool.budgetSchedule": (NODEPOOL, "spec.disruption.budgets[].schedule"),
    "nodePool.budgetDuration": (NODEPOOL, "spec.disruption.budgets[].duration"),
    "nodePool.budgetReason": (NODEPOOL, "spec.disruption.budgets[].reasons[]"),
    "nodePool.labels": (NODEPOOL, "spec.template.metadata.labels"),
    "nodePool.labelValue": (NODEPOOL, "spec.template.metadata.labels.*"),
    "nodePool.expireAfter": (NODEPOOL, "spec.template.spec.expireAfter"),
    "nodePool.terminationGracePeriod": (NODEPOOL, "spec.template.spec.terminationGracePeriod"),
    "nodePool.requirements": (NODEPOOL, "spec.template.spec.requirements"),
    "nodePool.requirementKey": (NODEPOOL, "spec.template.spec.requirements[].key"),
    "nodePool.requirementOperator": (NODEPOOL, "spec.template.spec.requirements[].operator"),
    "nodePool.requirementValues": (NODEPOOL, "spec.template.spec.requirements[].values"),
    "nodePool.minValues": (NODEPOOL, "spec.template.spec.requirements[].minValues"),
    "nodePool.taints": (NODEPOOL, "spec.template.spec.taints"),
    "nodePool.taintKey": (NODEPOOL, "spec.template.spec.taints[].key"),
    "nodePool.taintValue": (NODEPOOL, "spec.template.spec.taints[].value"),
    "nodePool.taintEffect": (NODEPOOL, "spec.template.spec.taints[].effect"),
    "ec2NodeClass.subnetId": (EC2NODECLASS, "spec.subnetSelectorTerms[].id"),
    "ec2NodeClass.securityGroupId": (EC2NODECLASS, "spec.securityGroupSelectorTerms[].id"),
    "ec2NodeClass.capacityReservationId": (EC2NODECLASS, "spec.capacityReservationSelectorTerms[].id"),
    "ec2NodeClass.capacityReservationOwnerId": (EC2NODECLASS, "spec.capacityReservationSelectorTerms[].ownerID"),
    "ec2NodeClass.placementGroupId": (EC2NODECLASS, "spec.placementGroupSelector.id"),
    "ec2NodeClass.tags": (EC2NODECLASS, "spec.tags"),
}

#: The schema constraints copied as they are.
_CONSTRAINTS = ("pattern", "maxLength", "minLength", "enum", "minimum", "maximum", "maxItems", "maxProperties")

_LIST = r"\[((?:\s*\"[^\"]+\"\s*,?)*)\]"
_QUOTED = re.compile(r"\"([^\"]+)\"")
_KEY = r"(?:self|x|k)"


def _names(listed: str) -> list[str]:
    return sorted(set(_QUOTED.findall(listed)))


def _or_operators(text: str) -> list[str]:
    return re.findall(r"x\.operator == '(\w+)'", text)


#: The shapes of CEL rule this tool reads, each with what it adds to the field's facts.
_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, Any]]], ...] = (
    # a reserved label domain and the keys of it that are allowed (on a key, or on every key of a map)
    (
        re.compile(
            rf"^(?:self\.all\(x, )?{_KEY} in {_LIST} \|\| "
            rf"!{_KEY}\.find\(\"\^\(\[\^/\]\+\)\"\)\.endsWith\(\"([a-z0-9.-]+)\"\)\)?$"
        ),
        lambda m: ("reservedDomains", {m.group(2): _names(m.group(1))}),
    ),
    # one key that may not be used
    (
        re.compile(rf"^(?:self\.all\({_KEY}, )?{_KEY} ?!= ?[\"']([^\"']+)[\"']\)?$"),
        lambda m: ("restrictedKeys", [m.group(1)]),
    ),
    # keys that may not start with a prefix
    (
        re.compile(r"^self\.all\(k, !k\.startsWith\('([^']+)'\) ?\)$"),
        lambda m: ("restrictedPrefixes", [m.group(1)]),
    ),
    # no empty map key
    (re.compile(r"^self\.all\(k, k != ''\)$"), lambda m: ("nonEmptyKeys", True)),
    # operators that need at least one value
    (
        re.compile(r"^self\.all\(x, x\.operator == '(\w+)' \? x\.values\.size\(\) != 0 : true\)$"),
        lambda m: ("operatorsNeedingValues", [m.group(1)]),
    ),
    # operators that take exactly one whole number, not below zero
    (
        re.compile(
            r"^self\.all\(x, \(((?:x\.operator == '\w+'(?: \|\| )?)+)\) \? "
            r"\(x\.values\.size\(\) == 1 && int\(x\.values\[0\]\) >= 0\) : true\)$"
        ),
        lambda m: ("operatorsTakingOneWholeNumber", _or_operators(m.group(1))),
    ),
    # operators under which minValues may not exceed the number of values
    (
        re.compile(
            r"^self\.all\(x, \(x\.operator == '(\w+)' && has\(x\.minValues\)\) \? "
            r"x\.values\.size\(\) >= x\.minValues : true\)$"
        ),
        lambda m: ("minValuesAtMostValuesFor", [m.group(1)]),
    ),
    # two fields set together or not at all
    (
        re.compile(r"^self\.all\(x, has\(x\.(\w+)\) == has\(x\.(\w+)\)\)$"),
        lambda m: ("together", sorted([m.group(1), m.group(2)])),
    ),
)


def _v1_schema(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


def _at(schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    node = schema
    for part in path.split("."):
        name, items = part.removesuffix("[]"), part.endswith("[]")
        node = node["additionalProperties"] if name == "*" else node["properties"][name]
        if items:
            node = node["items"]
    return node


def _read_rule(rule: str, where: str) -> tuple[str, Any]:
    for shape, read in _RULES:
        if found := shape.match(rule):
            return read(found)
    raise ValueError(f"{where}: a CEL rule of a shape this tool does not read: {rule}")


def _facts(node: Mapping[str, Any], where: str) -> dict[str, Any]:
    facts: dict[str, Any] = {k: node[k] for k in _CONSTRAINTS if k in node}
    if "enum" in facts:
        facts["enum"] = sorted(facts["enum"])
    for validation in node.get("x-kubernetes-validations", ()):
        name, value = _read_rule(" ".join(validation["rule"].split()), where)
        if isinstance(value, dict):
            facts.setdefault(name, {}).update(value)
        elif isinstance(value, list) and name != "together":
            facts[name] = sorted(set(facts.get(name, [])) | set(value))
        else:
            facts[name] = value
    return facts


def derive(crds: Path) -> dict[str, Any]:
    """The rules, read from the CRDs in `crds`."""
    schemas = {name: _v1_schema(yaml.safe_load((crds / name).read_text())) for name in (NODEPOOL, EC2NODECLASS)}
    rules = {
        name: {"crd": crd, "path": path, **_facts(_at(schemas[crd], path), f"{crd} {path}")}
        for name, (crd, path) in FIELDS.items()
    }
    return {
        "about": (
            "Value rules of the Karpenter CRDs that stack config applies before deploying, derived from the CRDs by "
            "components/tools/karpenter_crd_rules.py (do not edit by hand). Schema constraints as they are; CEL rules "
            "read as reserved domains, restricted keys and operator rules."
        ),
        "source": (
            f"aws/karpenter-provider-aws v{versions.KARPENTER.version} pkg/apis/crds ({NODEPOOL}, {EC2NODECLASS})"
        ),
        "rules": rules,
    }


def shipped() -> str:
    return resources.files(karpenter).joinpath("crd_rules.json").read_text(encoding="utf-8")


def render(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.tools.karpenter_crd_rules", description=__doc__)
    parser.add_argument("--crds", type=Path, required=True, help="the folder holding the pinned Karpenter CRDs")
    parser.add_argument("--write", action="store_true", help="rewrite components/karpenter/crd_rules.json")
    args = parser.parse_args(argv)
    text = render(derive(args.crds))
    if args.write:
        target = Path(str(resources.files(karpenter).joinpath("crd_rules.json")))
        target.write_text(text, encoding="utf-8")
        return 0
    if text != shipped():
        print("components/karpenter/crd_rules.json differs from the CRDs: rerun with --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
