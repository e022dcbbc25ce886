"""Helpers the Karpenter tests share: building specs, collecting what stack config reports for a pool or class, and
checking rendered objects against the pinned Karpenter CRDs (schemas and CEL rules) in-process with refcheck."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable
from functools import cache
from typing import Any

import pytest

from components.config.errors import ConfigError
from components.karpenter.render import NodeClassContext
from components.karpenter.specs import NodeClassSpec, NodePoolSpec
from components.platform.parse import parse_config
from tests.conftest import REFCHECK

CONTEXT = NodeClassContext(cluster_name="ml", node_role_name="ml-node", tags={"team": "ml", "owner": "ml-platform"})
P = "karpenter.nodePools.p"
C = "karpenter.nodeClasses.c"


def pool(**fields: Any) -> NodePoolSpec:
    return NodePoolSpec.model_validate(fields)


def node_class(**fields: Any) -> NodeClassSpec:
    return NodeClassSpec.model_validate(fields)


def req(key: str, operator: str = "In", *values: str, **extra: Any) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator, **extra}
    if values:
        requirement["values"] = list(values)
    return requirement


def raw(karpenter: dict[str, Any], **more: Any) -> dict[str, str]:
    config = {
        "aws:region": "us-west-2",
        "eks-ml-platform:environment": "prod",
        "eks-ml-platform:owner": "ml",
        "eks-ml-platform:karpenter": json.dumps(karpenter),
    }
    config.update({f"eks-ml-platform:{k}": json.dumps(v) for k, v in more.items()})
    return config


def karpenter_config(karpenter: dict[str, Any]):
    return parse_config(raw(karpenter), project="eks-ml-platform", stack="prod").karpenter


def config_problems(karpenter: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw(karpenter), project="eks-ml-platform", stack="prod")
    return {issue.path: issue.message for issue in caught.value.issues}


def all_config_problems(karpenter: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (path, message), repeats of a path kept (a field can have several problems)."""
    with pytest.raises(ConfigError) as caught:
        parse_config(raw(karpenter), project="eks-ml-platform", stack="prod")
    return [(issue.path, issue.message) for issue in caught.value.issues]


def problems(*, node_classes: dict[str, Any] | None = None, **fields: Any) -> dict[str, str]:
    """Every problem stack config reports for one pool `p` with these fields (and these node classes)."""
    karpenter: dict[str, Any] = {"nodePools": {"p": fields}}
    if node_classes is not None:
        karpenter["nodeClasses"] = node_classes
    return config_problems(karpenter)


def class_problems(**fields: Any) -> dict[str, str]:
    """Every problem stack config reports for one node class `c` (used by a CPU pool)."""
    return config_problems(
        {"nodeClasses": {"c": fields}, "nodePools": {"p": {"preset": "cpu-general", "nodeClass": "c"}}}
    )


def taints(rendered: dict[str, Any]) -> list[dict[str, str]]:
    return rendered["spec"]["template"]["spec"].get("taints", [])


# ------------------------------------------------------------------------------------------ CRDs, in-process


@cache
def _refcheck() -> Any:
    spec = importlib.util.spec_from_file_location("refcheck", REFCHECK)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@cache
def _checker() -> Any:
    """One checker for the session: it caches compiled schemas and CEL programs (a fresh one takes a second)."""
    module = _refcheck()
    return module.K8sChecker(module.Reference(module.default_ref_dir()), module.Report(), ["1.35"], module.CelEngine())


def crd_findings(objects: Iterable[dict[str, Any]]) -> list[str]:
    """What refcheck reports (errors and warnings) for these objects against the pinned CRDs, CEL rules included."""
    module, checker = _refcheck(), _checker()
    checker.rep = report = module.Report()
    evaluated = checker.cel.evaluated
    checked = [module.Obj(o, "rendered", index) for index, o in enumerate(objects, 1)]
    for o in checked:
        checker.check(o, checked)
    assert checker.cel.evaluated > evaluated or not module.HAVE_CEL  # the CEL rules did run
    return [f"{f['level']} {f['where']}: {f['msg']}" for f in report.findings if f["level"] in ("ERROR", "WARN")]
