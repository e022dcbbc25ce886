"""Where Kubeflow Pipelines keep artifacts in the platform's bucket (`kubeflow.pipelines.artifacts: s3`): the store
(region, teams' prefixes), the layout of the keys the platform writes there, and what a team prefix must respect to
hold them (S3's key length, the API server's own prefix). Sources are named in pipelines.py's docstring and beside
each fact below."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..identity.documents import dns_suffix
from ..identity.team_policy import prefix_within

#: Where the API server keeps pipeline definitions (its `PipelinePath`), in `kubeflow.bucket`; no team prefix may
#: overlap it.
SERVER_PREFIX = "kubeflow/pipelines"
#: Each team's runs write below `<s3Prefix>/<TEAM_FOLDER>`, inside the prefix its role already owns.
TEAM_FOLDER = "pipelines"


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


@dataclass(frozen=True)
class S3Store:
    """The platform bucket as Pipelines' object store: its region and the teams' prefixes (team -> s3Prefix)."""

    region: str
    team_prefixes: Mapping[str, str]

    @property
    def partition(self) -> str:
        return partition_of(self.region)

    @property
    def endpoint(self) -> str:
        """S3's regional endpoint (host only), which the API server, the launcher and Argo all reach over TLS."""
        return f"s3.{self.region}.{dns_suffix(self.partition)}"

    def team_root(self, team: str) -> str:
        """The key prefix a team's runs write below."""
        return f"{self.team_prefixes[team]}/{TEAM_FOLDER}"


def log_key_format(root: str) -> str:
    """Argo's `keyFormat` of a team's archived step logs, below its runs' root."""
    return (
        f"{root}/logs/{{{{workflow.name}}}}/{{{{workflow.creationTimestamp.Y}}}}/{{{{workflow.creationTimestamp.m}}}}"
        f"/{{{{workflow.creationTimestamp.d}}}}/{{{{pod.name}}}}"
    )


#: Amazon S3 User Guide, "Naming Amazon S3 objects": an object key is at most 1,024 bytes of UTF-8 (a team prefix is
#: ASCII, so bytes are characters).
S3_KEY_BYTES = 1024
#: Kubernetes docs, "Object Names and IDs": a Workflow's and a Pod's names are DNS subdomains of at most 253 characters.
_LONGEST_NAME = "n" * 253
#: Argo stores a step's archived log as `<keyFormat>/main.log` (argo-workflows workflow/executor/executor.go,
#: SaveLogs: `path.Join(key, "main.log")`).
_ARGO_LOG_FILE = "main.log"


def longest_key_below(prefix: str) -> str:
    """The longest key the platform's own layout writes below a team's prefix: a step's archived log, with the longest
    workflow and pod names Kubernetes allows (what users' pipelines name below `<prefix>/pipelines` is theirs)."""
    key = log_key_format(f"{prefix}/{TEAM_FOLDER}")
    for placeholder, value in {
        "{{workflow.name}}": _LONGEST_NAME,
        "{{workflow.creationTimestamp.Y}}": "2026",
        "{{workflow.creationTimestamp.m}}": "01",
        "{{workflow.creationTimestamp.d}}": "01",
        "{{pod.name}}": _LONGEST_NAME,
    }.items():
        key = key.replace(placeholder, value)
    return f"{key}/{_ARGO_LOG_FILE}"


#: The longest team prefix below which that key still fits in S3's limit.
PREFIX_MAX_LENGTH = S3_KEY_BYTES - len(longest_key_below(""))


def prefix_length_problem(prefix: str) -> str | None:
    """Why a team prefix is too long for the keys the platform writes below it, or None."""
    if len(prefix) <= PREFIX_MAX_LENGTH:
        return None
    return (
        f"expected at most {PREFIX_MAX_LENGTH} characters, got {len(prefix)}: S3 keys are at most {S3_KEY_BYTES} "
        f"bytes, and below the prefix Pipelines keep step logs at keys up to {len(longest_key_below(''))} characters "
        "longer (<prefix>/pipelines/logs/<workflow>/<date>/<pod>/main.log)"
    )


def server_prefix_overlap(prefix: str, server: str = SERVER_PREFIX) -> str | None:
    """Why `prefix` may not be a team's while Pipelines run on S3 (it is, holds or lies within the API server's
    `server` prefix, so the team's role could read and write every team's pipeline definitions), or None. The
    platform's teams and team stacks are both checked with it."""
    if prefix_within(prefix, server) or prefix_within(server, prefix):
        return f"overlaps {server!r}, where the Pipelines API server keeps every team's pipelines"
    return None
