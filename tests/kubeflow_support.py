"""Reading the rendered Kubeflow workloads in the tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.kubeflow.objects import pod_template


def template_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template of an object the test knows to be a workload; fails the test, naming it, when it is not."""
    template = pod_template(obj)
    assert template is not None, f"{obj['kind']} {obj['metadata'].get('name')} has no pod template"
    return template
