"""The recovery tool of docs/runbook.md decides, for each pending operation an interrupted run left, what must happen
before `pulumi refresh` can hand the state back (the engine tier runs it against a real cluster after real faults;
these cases run it against a recorded state and a stand-in Helm)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from components.tools.recover import HELM_RELEASE, RecoverError, Recovery, recover

STACK = "urn:pulumi:dev::eks-ml-platform::"


def _op(kind: str, type_: str, resource: str, **inputs: Any) -> dict[str, Any]:
    return {"type": kind, "resource": {"urn": f"{STACK}{type_}::{resource}", "type": type_, "inputs": inputs}}


class Shell:
    """Answers `pulumi stack export` with the given pending operations and `helm status` with the given statuses;
    records every command."""

    def __init__(self, pending: list[dict[str, Any]], helm: dict[str, str]) -> None:
        self.pending, self.helm, self.ran = pending, helm, []  # type: ignore[var-annotated]
        self.unreachable = False
        #: `helm history -o json`: revision 1 ran, 2 failed, 3 is the cut upgrade.
        self.history = [
            {"revision": 1, "status": "superseded"},
            {"revision": 2, "status": "failed"},
            {"revision": 3, "status": "pending-upgrade"},
        ]

    def __call__(self, argv: Sequence[str]) -> tuple[int, str]:
        self.ran.append(list(argv))
        if argv[:3] == ["pulumi", "stack", "export"]:
            return 0, json.dumps({"deployment": {"pending_operations": self.pending}})
        if argv[0] == "helm" and argv[1] == "status":
            if self.unreachable:
                return 1, "Error: Kubernetes cluster unreachable: connection refused"
            status = self.helm.get(argv[2])
            return (0, json.dumps({"info": {"status": status}})) if status else (1, "Error: release: not found")
        if argv[0] == "helm" and argv[1] == "history":
            return 0, json.dumps(self.history)
        return 0, ""

    def commands(self) -> list[str]:
        return [
            " ".join(a[:2]) + (" --clear-pending-creates" if "--clear-pending-creates" in a else "") for a in self.ran
        ]


def _recover(shell: Shell, **flags: bool) -> None:
    recover(
        Recovery("dev", "helm", None, shell),
        apply=True,
        clear_unknown=flags.get("clear_unknown", False),
        say=lambda _: None,
    )


def test_a_release_whose_install_was_cut_is_uninstalled_before_pending_creates_are_cleared() -> None:
    shell = Shell(
        [_op("creating", HELM_RELEASE, "kserve", name="kserve", namespace="kserve")], {"kserve": "pending-install"}
    )
    _recover(shell)
    assert ["helm", "uninstall", "kserve", "--wait", "--namespace", "kserve"] in shell.ran
    assert shell.commands()[-1] == "pulumi refresh --clear-pending-creates"


def test_a_release_the_killed_run_finished_installing_is_uninstalled_too() -> None:
    """Helm refuses to install a name in use, and the state never recorded it."""
    shell = Shell([_op("creating", HELM_RELEASE, "kserve", name="kserve", namespace="kserve")], {"kserve": "deployed"})
    _recover(shell)
    assert "helm uninstall" in shell.commands()


def test_a_release_never_installed_needs_only_the_clear() -> None:
    shell = Shell([_op("creating", HELM_RELEASE, "kserve", name="kserve", namespace="kserve")], {})
    _recover(shell)
    assert shell.commands() == ["pulumi stack", "helm status", "pulumi refresh --clear-pending-creates"]


def test_a_release_left_pending_upgrade_is_rolled_back() -> None:
    shell = Shell(
        [_op("updating", HELM_RELEASE, "obs", name="observability", namespace="monitoring")],
        {"observability": "pending-upgrade"},
    )
    _recover(shell)
    # Not `helm rollback` alone, which goes one revision back, to the failed one.
    assert ["helm", "rollback", "observability", "1", "--wait", "--namespace", "monitoring"] in shell.ran
    assert shell.commands()[-1] == "pulumi refresh"  # no create pending: nothing to clear


def test_kubernetes_objects_and_pending_deletes_are_left_to_refresh_and_up() -> None:
    """An object the cut run may have made is taken over by the next `up`, which the tool says must run with the
    provider's upsert setting (the provider refuses to create an existing object otherwise)."""
    said: list[str] = []
    shell = Shell(
        [
            _op("creating", "kubernetes:apps/v1:Deployment", "web", metadata={"name": "web"}),
            _op("deleting", "aws:s3/bucket:Bucket", "datasets"),
        ],
        {},
    )
    recover(Recovery("dev", "helm", None, shell), apply=True, clear_unknown=False, say=said.append)
    assert shell.commands() == ["pulumi stack", "pulumi refresh --clear-pending-creates"]
    assert said[-1] == (
        "refreshed: run `PULUMI_K8S_UPSERT_EXISTING_OBJECTS=true PULUMI_K8S_ENABLE_PATCH_FORCE=true pulumi up` "
        "(or `pulumi destroy`) again, then `pulumi up` once more without them"
    )


def test_a_cluster_helm_cannot_reach_stops_the_tool_rather_than_reading_as_no_release() -> None:
    shell = Shell([_op("creating", HELM_RELEASE, "kserve", name="kserve", namespace="kserve")], {"kserve": "deployed"})
    shell.unreachable = True
    with pytest.raises(RecoverError, match="cluster unreachable"):
        _recover(shell)
    assert not any("refresh" in c for c in shell.commands())


def test_an_aws_resource_being_created_stops_the_tool_naming_it_until_the_user_decides() -> None:
    pending = [_op("creating", "aws:ec2/vpc:Vpc", "network-vpc", tags={"Name": "network-vpc"})]
    shell = Shell(pending, {})
    with pytest.raises(RecoverError) as error:
        _recover(shell)
    assert f"{STACK}aws:ec2/vpc:Vpc::network-vpc" in str(error.value)
    assert '"Name": "network-vpc"' in str(error.value)
    assert "pulumi import" in str(error.value)
    assert not any("refresh" in c for c in shell.commands())
    _recover(shell, clear_unknown=True)
    assert shell.commands()[-1] == "pulumi refresh --clear-pending-creates"


def test_an_eks_add_on_or_access_entry_is_named_by_what_eks_looks_it_up_by() -> None:
    """`aws eks describe-addon` takes the cluster and the add-on's name, `describe-access-entry` the cluster and the
    principal: the runbook's lookup needs both printed."""
    role = "arn:aws:iam::123456789012:role/karpenter-node-1234567"
    pending = [
        _op("creating", "aws:eks/addon:Addon", "cluster-coredns", clusterName="dev", addonName="coredns"),
        _op("creating", "aws:eks/accessEntry:AccessEntry", "karpenter-node", clusterName="dev", principalArn=role),
    ]
    with pytest.raises(RecoverError) as error:
        _recover(Shell(pending, {}))
    assert '{"addonName": "coredns", "clusterName": "dev"}' in str(error.value)
    assert f'{{"clusterName": "dev", "principalArn": "{role}"}}' in str(error.value)


def test_without_apply_nothing_is_changed() -> None:
    shell = Shell([_op("creating", HELM_RELEASE, "kserve", name="kserve", namespace="kserve")], {"kserve": "deployed"})
    said: list[str] = []
    recover(Recovery("dev", "helm", None, shell), apply=False, clear_unknown=False, say=said.append)
    assert shell.commands() == ["pulumi stack", "helm status"]
    assert any("is uninstalled" in s for s in said)


def test_the_engine_tier_repeats_the_run_with_upsert_exactly_when_the_tool_asks_for_it() -> None:
    """The lifecycle test follows the runbook's step 3 by reading the tool's last line: the two must keep agreeing."""
    import subprocess

    from engine.faults import rerun_env

    for pending, expected in (
        (
            [_op("creating", "kubernetes:apps/v1:Deployment", "web", metadata={"name": "web"})],
            {"PULUMI_K8S_UPSERT_EXISTING_OBJECTS": "true", "PULUMI_K8S_ENABLE_PATCH_FORCE": "true"},
        ),
        ([_op("deleting", "aws:s3/bucket:Bucket", "datasets")], {}),
    ):
        said: list[str] = []
        recover(Recovery("dev", "helm", None, Shell(pending, {})), apply=True, clear_unknown=False, say=said.append)
        assert rerun_env([subprocess.CompletedProcess([], 0, "\n".join(said), "")]) == expected


@pytest.mark.subprocess
def test_without_pulumi_on_path_the_tool_says_so_instead_of_a_traceback(monkeypatch, capsys) -> None:
    from components.tools import recover as tool

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("components.tools.charts.binary.helm_binary", lambda: "helm")
    assert tool.main(["--stack", "dev"]) == 2
    assert "`pulumi` is not on PATH" in capsys.readouterr().err
