"""The security scan of what the platform installs: checkov, a scanner nobody here wrote, run over Kubernetes objects
and judged against the allow-list `tests/data/checkov-allowlist.yaml`, where every accepted finding says why.

checkov pins its own boto3 and packaging, older than the package's, so it lives in a virtualenv of its own
(`.venv-scan`, made by `make test` from `tests/checkov-requirements.txt`) and runs as a process.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
CHECKOV = REPO / ".venv-scan" / "bin" / "checkov"
ALLOWLIST = Path(__file__).resolve().parent / "data" / "checkov-allowlist.yaml"

#: Values a chart refuses to render without (`required` in its templates), given when it is rendered with upstream's
#: defaults so that the comparison has something to compare.
REQUIRED_VALUES: Mapping[str, Mapping[str, Any]] = {
    "aws-load-balancer-controller": {"clusterName": "dev"},
    "karpenter": {"settings": {"clusterName": "dev"}},
}


@dataclass(frozen=True, order=True)
class Finding:
    """A failed check on one object, named as checkov names it: `Kind.namespace.name` (`default` for cluster-scoped
    objects and objects that name no namespace)."""

    check: str
    resource: str
    source: str = ""


@dataclass(frozen=True)
class Allowed:
    check: str
    objects: tuple[str, ...]
    why: str

    def covers(self, finding: Finding) -> bool:
        return finding.check == self.check and any(fnmatch.fnmatchcase(finding.resource, p) for p in self.objects)


class ScannerMissing(RuntimeError):
    """checkov is not installed where the tests look for it."""


def load_allowlist(path: Path = ALLOWLIST) -> list[Allowed]:
    """The allow-list, refusing an entry without a check, objects or a reason."""
    entries = yaml.safe_load(path.read_text()) or []
    allowed, errors = [], []
    for index, entry in enumerate(entries):
        where = f"{path.name}[{index}]"
        if not isinstance(entry, dict) or set(entry) != {"check", "objects", "why"}:
            errors.append(f"{where}: expected exactly the keys check, objects and why, got {entry!r}")
            continue
        objects = entry["objects"]
        if not (isinstance(objects, list) and objects and all(isinstance(o, str) and o for o in objects)):
            errors.append(f"{where}.objects: expected a non-empty list of object patterns, got {objects!r}")
        if not (isinstance(entry["why"], str) and entry["why"].strip()):
            errors.append(f"{where}.why: expected the reason the finding is accepted, got {entry['why']!r}")
        allowed.append(Allowed(str(entry["check"]), tuple(objects or ()), str(entry["why"])))
    if errors:
        raise ValueError("\n".join(errors))
    return allowed


def judge(findings: Iterable[Finding], allowed: Sequence[Allowed]) -> tuple[list[Finding], list[str]]:
    """The findings no entry covers, and the entries' object patterns that no finding matches any more (an entry
    outliving its finding would hide the next one)."""
    findings = list(findings)
    new = sorted({f for f in findings if not any(entry.covers(f) for entry in allowed)})
    stale = [
        f"{entry.check} {pattern}"
        for entry in allowed
        for pattern in entry.objects
        if not any(f.check == entry.check and fnmatch.fnmatchcase(f.resource, pattern) for f in findings)
    ]
    return new, stale


#: Kinds checkov checks the pods of; each must come back in its report, or the scan refuses to count.
POD_OWNERS = frozenset({"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"})


def scan(objects_by_source: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Finding]:
    """Every failed checkov Kubernetes check on these objects, each with the source it came from.

    Each object goes into a file of its own: checkov skips, without a word, a whole file in which it finds a Go
    template marker (`{{`), as Istio's sidecar injector ConfigMap carries, and any file over 5 MB (Kubeflow's CRDs,
    on which it has no check anyway, so they are left out). Every pod-owning object must come back in the report."""
    if not CHECKOV.exists():
        raise ScannerMissing(f"{CHECKOV.relative_to(REPO)} is missing: `make test` installs it")
    sources: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="checkov-") as scratch:
        folder = Path(scratch)
        for number, (source, obj) in enumerate(
            (source, obj) for source, objects in objects_by_source.items() for obj in objects
        ):
            if obj.get("kind") == "CustomResourceDefinition":
                continue
            name = f"{number:05d}.yaml"
            sources[name] = source
            (folder / name).write_text(yaml.safe_dump(dict(obj)))
        # not --quiet: the passed checks show what was scanned
        command = [str(CHECKOV), "--directory", str(folder), "--framework", "kubernetes", "--output", "json"]
        done = subprocess.run(
            [*command, "--compact", "--skip-download"],
            capture_output=True,
            text=True,
            check=False,
        )
        # checkov exits 1 when a check fails; only its report says whether it ran
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            raise RuntimeError(f"checkov failed (exit {done.returncode}): {done.stderr.strip()[-800:]}") from exc
        owners = {f.name for f in folder.iterdir() if yaml.safe_load(f.read_text()).get("kind") in POD_OWNERS}
    reports = [part for part in (report if isinstance(report, list) else [report]) if part.get("check_type")]
    results = [r for part in reports if part["check_type"] == "kubernetes" for r in part["results"]["failed_checks"]]
    seen = {
        Path(r["file_path"]).name
        for part in reports
        for kind in ("passed_checks", "failed_checks")
        for r in part["results"][kind]
    }
    if owners - seen:
        raise RuntimeError(f"checkov skipped {len(owners - seen)} pod-owning objects (files {sorted(owners - seen)})")
    return sorted(Finding(r["check_id"], r["resource"], sources[Path(r["file_path"]).name]) for r in results)
