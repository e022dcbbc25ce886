"""The `aws` command a team stack's kubeconfig runs (`aws eks get-token`), standing in inside the box.

A kubeconfig made from the platform's outputs (`components.cluster.attach.kubeconfig`) authenticates as EKS does:
its exec plugin runs `aws eks get-token --cluster-name <name> --region <region> --output json` and sends the token
it prints. Here the token is one the box's API server knows (`--token-auth-file`: the identity an access entry of
`cluster.adminPrincipals` with the cluster admin policy gives), read from `EKSML_ENGINE_TOKEN`. Any other command is
refused, so nothing else of the AWS CLI is assumed to work.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta

TOKEN_ENV = "EKSML_ENGINE_TOKEN"


def main(argv: list[str]) -> int:
    if argv[:2] != ["eks", "get-token"] or "--cluster-name" not in argv:
        refused = f"the engine tier's aws stand-in answers `aws eks get-token --cluster-name ...` only: {argv}"
        print(refused, file=sys.stderr)
        return 2
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


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
