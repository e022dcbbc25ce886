"""The `aws` command inside the box: `aws eks get-token`, which a team stack's kubeconfig runs, and the few commands
of docs/runbook.md a user runs against the account, answered from the fake account (engine/providers/account.py).

A kubeconfig made from the platform's outputs (`components.cluster.attach.kubeconfig`) authenticates as EKS does:
its exec plugin runs `aws eks get-token --cluster-name <name> --region <region> --output json` and sends the token
it prints. Here the token is one the box's API server knows (`--token-auth-file`: the identity an access entry of
`cluster.adminPrincipals` with the cluster admin policy gives), read from `EKSML_ENGINE_TOKEN`.

`aws logs describe-log-groups --log-group-name-prefix <prefix>` and `aws logs delete-log-group --log-group-name
<name>` read and delete the log groups the fake provider made, printing what the AWS CLI prints. Any other command
is refused, so nothing else of the AWS CLI is assumed to work.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from engine.providers.account import ACCOUNT

TOKEN_ENV = "EKSML_ENGINE_TOKEN"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
#: The AWS CLI's exit code when the service answered with an error
#: (https://docs.aws.amazon.com/cli/latest/userguide/cli-usage-returncodes.html).
SERVICE_ERROR = 254


class Usage(Exception):
    """A command line the stand-in does not answer."""


def _option(argv: list[str], name: str) -> str:
    if name not in argv or argv.index(name) + 1 >= len(argv):
        raise Usage(f"{name} <value> is required")
    return argv[argv.index(name) + 1]


def get_token(argv: list[str]) -> int:
    _option(argv, "--cluster-name")
    token = os.environ.get(TOKEN_ENV)
    if not token:
        print(f"{TOKEN_ENV} is not set: the box's token for the cluster's admin principal", file=sys.stderr)
        return 2
    # As the AWS CLI prints it: an ExecCredential whose token expires within 15 minutes.
    expires = (datetime.now(UTC) + timedelta(minutes=14)).strftime("%Y-%m-%dT%H:%M:%SZ")
    credential = {
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "spec": {},
        "status": {"expirationTimestamp": expires, "token": token},
    }
    print(json.dumps(credential))
    return 0


def describe_log_groups(argv: list[str]) -> int:
    """The log groups whose name starts with the prefix, in the fields of DescribeLogGroups' `logGroups`
    (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_DescribeLogGroups.html)."""
    prefix = _option(argv, "--log-group-name-prefix")
    found = [
        {"logGroupName": state["name"], "retentionInDays": state.get("retentionInDays"), "arn": state.get("arn")}
        for _, state in ACCOUNT.of_type(LOG_GROUP)
        if str(state.get("name", "")).startswith(prefix)
    ]
    print(json.dumps({"logGroups": sorted(found, key=lambda group: str(group["logGroupName"]))}, indent=4))
    return 0


def delete_log_group(argv: list[str]) -> int:
    """DeleteLogGroup: nothing printed, or ResourceNotFoundException for a name the account does not hold
    (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_DeleteLogGroup.html, Errors)."""
    name = _option(argv, "--log-group-name")
    held = [resource_id for resource_id, state in ACCOUNT.of_type(LOG_GROUP) if state.get("name") == name]
    if not held:
        print(
            "An error occurred (ResourceNotFoundException) when calling the DeleteLogGroup operation: "
            "The specified log group does not exist.",
            file=sys.stderr,
        )
        return SERVICE_ERROR
    for resource_id in held:
        ACCOUNT.remove(LOG_GROUP, resource_id)
    return 0


COMMANDS: dict[tuple[str, str], Callable[[list[str]], int]] = {
    ("eks", "get-token"): get_token,
    ("logs", "describe-log-groups"): describe_log_groups,
    ("logs", "delete-log-group"): delete_log_group,
}


def main(argv: list[str]) -> int:
    command = COMMANDS.get((argv[0], argv[1])) if len(argv) >= 2 else None
    try:
        if command is None:
            raise Usage(f"answers only {', '.join(' '.join(c) for c in COMMANDS)}")
        return command(argv[2:])
    except Usage as error:
        print(f"the engine tier's aws stand-in: {error}: {argv}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
