"""The NodePool worked examples of docs/karpenter.md are real config: each parses, renders, and passes the pinned
Karpenter CRDs (schemas and CEL rules) when refcheck checks the rendered objects, as it checks the preview."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
import yaml

from components.karpenter.render import render_nodeclass, render_nodepools
from components.karpenter.specs import NODE_POOL_PRESETS
from components.platform.parse import parse_config
from components.scheduling import CSI_STARTUP_TAINTS
from tests.conftest import REFCHECK, REPO
from tests.karpenter_support import CONTEXT


def examples() -> list[dict[str, Any]]:
    """Every YAML block of the NodePool page that is stack config."""
    section = (REPO / "docs" / "karpenter.md").read_text()
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)]
    return [b for b in blocks if isinstance(b, dict) and all(str(k).startswith("eks-ml-platform:") for k in b)]


def config_of(example: dict[str, Any]):
    raw = {"aws:region": "us-west-2", "eks-ml-platform:environment": "prod", "eks-ml-platform:owner": "ml"}
    raw.update({key: json.dumps(value) for key, value in example.items()})
    return parse_config(raw, project="eks-ml-platform", stack="prod")


def rendered(example: dict[str, Any]) -> list[dict[str, Any]]:
    karpenter = config_of(example).karpenter
    return [render_nodeclass(name, spec, CONTEXT) for name, spec in sorted(karpenter.node_classes.items())] + list(
        render_nodepools(karpenter, [CSI_STARTUP_TAINTS["ebs"]]).values()
    )


def test_the_worked_examples_cover_what_the_best_gpu_platforms_run():
    found = [config_of(example) for example in examples()]
    classes = [c for config in found for c in config.karpenter.node_classes.values()]
    pools = [p for config in found for p in config.karpenter.node_pools.values()]
    assert any(
        c.efa_interfaces and c.instance_store_policy == "RAID0" and c.capacity_reservation_selector_terms
        for c in classes
    )
    assert {"h100", "b200"} <= {name for p in pools for name in p.gpu_names}
    assert any(p.accelerator == "neuron" and "inf2" in p.instance_families for p in pools)
    assert any(c.kubelet is not None for c in classes)
    assert any(set(p.architectures) == {"amd64", "arm64"} for p in pools)
    assert any(
        config.network.existing is not None
        and any(c.subnet_selector_terms for c in config.karpenter.node_classes.values())
        for config in found
    )


@pytest.mark.refcheck
@pytest.mark.subprocess
def test_every_worked_example_renders_objects_refcheck_accepts(tmp_path):
    manifests = []
    for index, example in enumerate(examples()):
        manifest = tmp_path / f"example-{index}.yaml"
        manifest.write_text(yaml.safe_dump_all(rendered(example)))
        manifests.append(manifest)
    for manifest in manifests:  # one run each: pools are checked against the classes of their own example
        result = subprocess.run(
            [sys.executable, str(REFCHECK), str(manifest), "-v"], capture_output=True, text=True, check=False
        )
        report = result.stdout.strip().splitlines()
        assert result.returncode == 0, result.stdout
        assert [line for line in report if line.startswith("WARN")] == []
        objects = len(list(yaml.safe_load_all(manifest.read_text())))
        assert report[-1] == f"refcheck: {objects} objects, 0 errors"
        assert any(re.search(r"CEL x-kubernetes-validations: [1-9]\d* evaluated \(0 failed\)", line) for line in report)


@pytest.mark.refcheck
@pytest.mark.subprocess
def test_every_preset_renders_objects_refcheck_accepts(tmp_path):
    example = {"eks-ml-platform:karpenter": {"nodePools": {name: {"preset": name} for name in NODE_POOL_PRESETS}}}
    manifest = tmp_path / "presets.yaml"
    manifest.write_text(yaml.safe_dump_all(rendered(example)))
    result = subprocess.run([sys.executable, str(REFCHECK), str(manifest)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
