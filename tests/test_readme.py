"""The README's library example is real code: it must run against the components as they are."""

from __future__ import annotations

import re

from components import mocks
from tests.conftest import REPO


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)


def test_readme_example_builds_a_network_and_cluster():
    (example,) = _python_blocks()
    inventory = mocks.run(lambda: exec(example, {}), project="other", stack="eu", region="eu-west-1", config={})
    cluster = inventory.one("eks:index:Cluster")
    assert cluster.inputs["name"] == "ml-eu"
    assert cluster.inputs["endpointPublicAccess"] is False
    assert inventory.one("aws:kms/key:Key").protect is True
    (role,) = [r for r in inventory.of_type("aws:iam/role:Role") if r.name == "my-controller-role"]
    assert "system:serviceaccount:tools:my-controller" in role.inputs["assumeRolePolicy"]
    private = [s for s in inventory.of_type("aws:ec2/subnet:Subnet") if "-private-" in s.name]
    assert {s.inputs["tags"]["karpenter.sh/discovery"] for s in private} == {"ml-eu"}


def test_readme_lists_every_policy_rule_with_its_level():
    from components.policy_rules import RULES

    text = (REPO / "README.md").read_text()
    for rule in RULES:
        assert f"| `{rule.name}` | {rule.enforcement} |" in text
