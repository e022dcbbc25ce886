"""What exists in the fake AWS account, shared by every provider process of one box and by the `aws` stand-in
(engine/aws_cli.py), and the names AWS keeps unique within an account.

Every `pulumi` command starts its own provider process, and stacks read what other stacks made (a team stack reads
the platform's node group and add-ons with `.get`), so the account is kept in files, one per resource, in the folder
`EKSML_ENGINE_ACCOUNT` names. Without the variable nothing is kept, and nothing is ever refused as taken.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Names the folder that holds what exists in the fake account, shared by every stack's provider in one box.
ACCOUNT_ENV = "EKSML_ENGINE_ACCOUNT"


class Account:
    """Each resource a stack created, by type and id, with its state: in `folder`, else where ACCOUNT_ENV says."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder

    def _folder(self) -> Path | None:
        folder = self.folder or os.environ.get(ACCOUNT_ENV)
        return Path(folder) if folder else None

    def _path(self, type_: str, resource_id: str) -> Path | None:
        if (folder := self._folder()) is None:
            return None
        key = hashlib.sha256(f"{type_}|{resource_id}".encode()).hexdigest()[:32]
        return folder / f"{key}.json"

    def put(self, type_: str, resource_id: str, state: Mapping[str, Any]) -> None:
        if (path := self._path(type_, resource_id)) is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".partial")
            partial.write_text(json.dumps({"type": type_, "id": resource_id, "state": state}, default=str))
            partial.replace(path)

    def get(self, type_: str, resource_id: str) -> dict[str, Any] | None:
        path = self._path(type_, resource_id)
        if path is None or not path.exists():
            return None
        return dict(json.loads(path.read_text())["state"])

    def remove(self, type_: str, resource_id: str) -> None:
        if (path := self._path(type_, resource_id)) is not None:
            path.unlink(missing_ok=True)

    def of_type(self, type_: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(id, state) of every resource of the type in the account."""
        for type_held, resource_id, state in self.items():
            if type_held == type_:
                yield resource_id, state

    def items(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """(type, id, state) of everything in the account."""
        folder = self._folder()
        if folder is None or not folder.is_dir():
            return
        for path in sorted(folder.glob("*.json")):
            held = json.loads(path.read_text())
            yield held["type"], held["id"], dict(held["state"])


ACCOUNT = Account()


@dataclass(frozen=True)
class UniqueName:
    """A type whose name the stack gives itself (no random suffix), which AWS refuses to create twice in an account:
    what identifies it, and the error its create returns, in pulumi-aws's words (terraform-provider-aws wraps the
    AWS SDK for Go v2's error: `creating <what> (<name>): operation error <service>: <action>, https response error
    StatusCode: <status>, ..., <code>: <message>`)."""

    what: str
    service: str
    action: str
    status: int
    code: str
    message: str
    #: The AWS API reference page that lists the error for the action.
    source: str
    identity: Callable[[Mapping[str, Any]], str]

    def refusal(self, name: str) -> str:
        return (
            f"creating {self.what} ({name}): operation error {self.service}: {self.action}, https response error "
            f"StatusCode: {self.status}, {self.code}: {self.message.format(name=name)}"
        )


def _key(*properties: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda state: ":".join(str(state.get(p)) for p in properties)


_EKS_API = "https://docs.aws.amazon.com/eks/latest/APIReference"

#: The types the stacks create with a fixed name. Auto-named types (`<logical>-<7 random hex>`: IAM roles and
#: policies, buckets, queues, event rules, node groups) never collide in AWS, and are left out on purpose: the fakes'
#: auto-names are deterministic, so a repeated create would collide here where AWS's random suffix does not.
UNIQUE_NAMES: Mapping[str, UniqueName] = {
    "aws:cloudwatch/logGroup:LogGroup": UniqueName(
        "CloudWatch Logs Log Group",
        "CloudWatch Logs",
        "CreateLogGroup",
        400,
        "ResourceAlreadyExistsException",
        "The specified log group already exists",
        "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html (Errors)",
        _key("name"),
    ),
    "aws:eks/cluster:Cluster": UniqueName(
        "EKS Cluster",
        "EKS",
        "CreateCluster",
        409,
        "ResourceInUseException",
        "Cluster already exists with name: {name}",
        f"{_EKS_API}/API_CreateCluster.html (Errors)",
        _key("name"),
    ),
    "aws:eks/addon:Addon": UniqueName(
        "EKS Add-On",
        "EKS",
        "CreateAddon",
        409,
        "ResourceInUseException",
        "Addon already exists.",
        f"{_EKS_API}/API_CreateAddon.html (Errors)",
        _key("clusterName", "addonName"),
    ),
    "aws:eks/accessEntry:AccessEntry": UniqueName(
        "EKS Access Entry",
        "EKS",
        "CreateAccessEntry",
        409,
        "ResourceInUseException",
        "The specified access entry resource is already in use on this cluster.",
        f"{_EKS_API}/API_CreateAccessEntry.html (Errors)",
        _key("clusterName", "principalArn"),
    ),
}


def taken(account: Account, type_: str, state: Mapping[str, Any]) -> str | None:
    """AWS's refusal to create a resource of this state when the account already holds one of the same name, else
    None."""
    rule = UNIQUE_NAMES.get(type_)
    if rule is None:
        return None
    identity = rule.identity(state)
    if any(rule.identity(held) == identity for _, held in account.of_type(type_)):
        return rule.refusal(identity)
    return None
