"""The offline preview: the folder contract other tools read, determinism, config errors, and secrets."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pytest
import yaml

from components.tools.preview import main, mocks
from components.tools.stack_files import SECRET_PLACEHOLDER
from tests.conftest import REPO
from tests.once_per_run import Previewed

# Every test here previews a stack; the platform previews also render its Helm releases (a process) for the model.
pytestmark = [pytest.mark.stack, pytest.mark.subprocess]

SNAPSHOTS = Path(__file__).parent / "snapshots"
RESOURCE_FIELDS = {
    "urn",
    "type",
    "name",
    "parent",
    "inputs",
    "dependencies",
    "protect",
    "retain_on_delete",
    "deleted_with",
}


@pytest.fixture(scope="module")
def dev_folder(dev_preview: Previewed) -> Path:
    assert dev_preview.status == 0, dev_preview.printed
    return dev_preview.folder


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_preview_writes_the_contracted_folder(dev_folder):
    assert {p.name for p in dev_folder.iterdir()} == {"resources.json", "manifests", "helm", "iam", "report.html"}
    resources = json.loads((dev_folder / "resources.json").read_text())["resources"]
    urns = {r["urn"] for r in resources}
    assert len(urns) == len(resources) > 30
    for resource in resources:
        assert set(resource) == RESOURCE_FIELDS
        assert resource["parent"] is None or resource["parent"] in urns
        assert set(resource["dependencies"]) <= urns
        assert isinstance(resource["protect"], bool)
        assert isinstance(resource["retain_on_delete"], bool)


def test_iam_folder_holds_every_trust_and_permission_policy_as_aws_receives_it(dev_folder, dev):
    written = {p.name: json.loads(p.read_text()) for p in (dev_folder / "iam").glob("*.json")}
    expected = {f"{r.name}.trust.json": r.inputs["assumeRolePolicy"] for r in dev.of_type("aws:iam/role:Role")}
    for kind in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"):
        expected |= {f"{r.name}.json": r.inputs["policy"] for r in dev.of_type(kind)}
    assert "karpenter-controller-controller.json" in expected
    assert set(written) == set(expected)
    for name, document in written.items():
        assert document == json.loads(expected[name])
        assert document["Version"] == "2012-10-17"


def test_preview_prints_the_resource_tree_counts_and_time(dev_preview: Previewed):
    assert dev_preview.status == 0
    printed = dev_preview.printed
    assert "Offline preview of stack 'dev'" in printed
    assert "\n  cluster (eksml:cluster:Cluster)\n    cluster-control-plane" in printed
    assert "     6  aws:eks/addon:Addon" in printed
    assert 'kubeconfig: "[secret]"' in printed
    # the platform's own pods (Kubeflow on cpu-general) and volumes are in the idle figure (tests/test_cost.py)
    assert "\nCost: about $888/month idle; up to $12,915/month with every pool at its limit\n" in printed
    assert "\nwarning: cluster.endpoint.publicCidrs: 203.0.113.0/24 is a documentation range (RFC 5737)" in printed
    assert re.search(r"^Wrote .+ in \d+\.\d\d s$", printed, flags=re.M)
    assert "\nPolicies: 23 rules, no violations\n" in printed
    assert printed.rstrip().endswith("every pod lands, gets its devices and survives node loss")


def test_two_runs_write_byte_identical_folders(dev_folder, tmp_path):
    again = tmp_path / "again"
    assert main(["--stack", "dev", "--out", str(again), "--project-dir", str(REPO)]) == 0
    assert _files(again) == _files(dev_folder)


@pytest.mark.subprocess
def test_preview_runs_as_a_module_from_the_repository(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "components.preview", "--stack", "prod", "--out", str(tmp_path / "prod")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "[protect]" in result.stdout
    assert (tmp_path / "prod" / "resources.json").exists()


def _project(tmp_path: Path, stack_file: str) -> Path:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "Pulumi.broken.yaml").write_text(stack_file)
    return tmp_path


def test_bad_config_exits_non_zero_with_every_problem_and_writes_nothing(tmp_path, capsys):
    project = _project(
        tmp_path,
        "config:\n"
        "  aws:region: us-west-2\n"
        "  eks-ml-platform:environment: staging\n"
        "  eks-ml-platform:network:\n"
        "    cidr: 10.0.0.0/8\n",
    )
    out = tmp_path / "out"
    assert main(["--stack", "broken", "--out", str(out), "--project-dir", str(project)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "environment: Input should be 'dev' or 'prod', got 'staging'" in captured.err
    assert "network.cidr: expected a prefix length between /16 and /22, got /8" in captured.err
    assert "owner: is required" in captured.err
    assert "Traceback" not in captured.err
    assert not out.exists()


def test_missing_stack_file_is_reported(tmp_path, capsys):
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    assert main(["--stack", "nope", "--out", str(tmp_path / "o"), "--project-dir", str(tmp_path)]) == 2
    assert "no stack file Pulumi.nope.yaml" in capsys.readouterr().err


def test_secure_values_become_placeholders(tmp_path):
    stack_file = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())
    stack_file["config"]["eks-ml-platform:owner"] = {"secure": "v1:c2VjcmV0:Y2lwaGVydGV4dA=="}
    project = _project(tmp_path, yaml.safe_dump(stack_file))
    out = tmp_path / "out"
    assert main(["--stack", "broken", "--out", str(out), "--project-dir", str(project)]) == 0
    written = (out / "resources.json").read_text()
    assert "Y2lwaGVydGV4dA" not in written
    assert SECRET_PLACEHOLDER in written


def test_secret_inputs_are_redacted_in_the_record():
    def program():
        aws.iam.Role("secretive", assume_role_policy=pulumi.Output.secret('{"Version": "2012-10-17"}'))

    inventory = mocks.run(program, project="p", stack="s", region="us-west-2", config={})
    assert inventory.one("aws:iam/role:Role").inputs["assumeRolePolicy"] == mocks.REDACTED


def test_mocks_fail_loudly_on_a_data_source_they_do_not_answer():
    def program():
        aws.get_region_output().region.apply(print)

    with pytest.raises(Exception, match="do not answer aws:index/getRegion:getRegion"):
        mocks.run(program, project="p", stack="s", region="us-west-2", config={})


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_resource_names_match_the_snapshot(stack, request):
    """Renaming a resource replaces it on the next `pulumi up`: a rename must be deliberate (and ship an alias)."""
    inventory = request.getfixturevalue(stack)
    actual = "".join(f"{r.type} {r.name}\n" for r in sorted(inventory.resources, key=lambda r: (r.type, r.name)))
    snapshot = SNAPSHOTS / f"{stack}-resources.txt"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(actual)
    assert actual == snapshot.read_text(), "resource names changed; rerun with UPDATE_SNAPSHOTS=1 if intended"
