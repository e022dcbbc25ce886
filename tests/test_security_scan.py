"""checkov, run on everything the dev and prod stacks install (their own objects, Kubeflow's, every Helm release
rendered with the platform's values): every failed check is on the allow-list with its reason, and the platform fails
no more of the checks it answers for one by one than upstream's defaults do (the same charts rendered with their default
values, Kubeflow's entries as kustomize renders them; dev's). The scans run once per session, in a module fixture."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PROJECT, REPO, stack_config
from tests.security_scan import REQUIRED_VALUES, Allowed, Finding, judge, load_allowlist, scan

CHARTS = REPO.parent / "shared" / "reference" / "charts"
pytest_charts = pytest.mark.skipif(
    not CHARTS.is_dir(), reason="../shared/reference/charts is not beside the repository"
)


def _source(origin: str) -> str:
    """Where an object comes from, as the counts group it: a Helm release, Kubeflow, or the platform's own."""
    if origin.startswith("helm/"):
        return origin
    return "kubeflow" if Path(origin).name.startswith("kubeflow-") else "platform"


# ------------------------------------------------------------------------------------------------ the allow-list


def test_every_allowlist_entry_names_a_check_objects_and_its_reason():
    entries = load_allowlist()
    assert entries
    assert all(entry.check.startswith(("CKV_K8S_", "CKV2_K8S_")) and entry.why.strip() for entry in entries)
    assert len({entry.check for entry in entries}) == len(entries)  # one entry per check, its objects listed there


def test_an_allowlist_entry_without_a_reason_is_refused(tmp_path):
    path = tmp_path / "allow.yaml"
    path.write_text("- check: CKV_K8S_16\n  objects: [DaemonSet.kube-system.agent]\n  why: ''\n")
    with pytest.raises(ValueError, match=r"allow.yaml\[0\].why: expected the reason"):
        load_allowlist(path)


def test_a_finding_no_entry_covers_is_new_and_a_pattern_without_its_finding_is_stale():
    allowed = [Allowed("CKV_K8S_16", ("DaemonSet.kube-system.fsx-*", "DaemonSet.kube-system.gone"), "mounts Lustre")]
    findings = [
        Finding("CKV_K8S_16", "DaemonSet.kube-system.fsx-csi-node"),
        Finding("CKV_K8S_16", "DaemonSet.teams.agent"),
        Finding("CKV_K8S_17", "DaemonSet.kube-system.fsx-csi-node"),  # the same object, another check
    ]
    new, stale = judge(findings, allowed)
    assert new == [findings[1], findings[2]]
    assert stale == ["CKV_K8S_16 DaemonSet.kube-system.gone"]


# ------------------------------------------------------------------------------------------------ the scans


def _findings(inventory: Any) -> list[Finding]:
    from components.tools.preview import platform_model

    built, _ = platform_model(inventory, CHARTS)
    assert built.unrendered == {}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for origin, obj in built.objects:
        grouped.setdefault(_source(origin), []).append(obj)
    return scan(grouped)


@pytest.fixture(scope="module")
def platform_findings(dev, prod) -> dict[str, list[Finding]]:
    """What checkov finds on each shipped stack: prod installs what dev does not (KServe, Pipelines on S3)."""
    return {"dev": _findings(dev), "prod": _findings(prod)}


def upstream_objects(dev) -> dict[str, list[dict[str, Any]]]:
    """The same charts with their default values (and only what they refuse to render without), and the same Kubeflow
    entries as kustomize renders them, before the platform's changes."""
    from components.kubeflow import fetch, render
    from components.kubeflow.config import selected_entries
    from components.platform.parse import parse_config
    from components.tools.cluster_model import helm
    from components.tools.preview import stack_view

    grouped: dict[str, list[dict[str, Any]]] = {}
    for release in stack_view(dev).releases:
        defaults = {**release, "values": dict(REQUIRED_VALUES.get(release["chart"], {}))}
        for obj in helm.render(defaults, CHARTS, "1.35.0"):
            obj.setdefault("metadata", {}).setdefault("namespace", release["namespace"])
            grouped.setdefault(f"helm/{release['name']}", []).append(obj)
    config = parse_config(stack_config("dev"), project=PROJECT, stack="dev")
    tree = fetch.tree(config.kubeflow.tree)
    rendered = render.render(tree, selected_entries(config.kubeflow), cache_dir=render.default_render_cache())
    grouped["kubeflow"] = [obj for objects in rendered.values() for obj in objects]
    return grouped


@pytest.mark.subprocess
@pytest.mark.stack
@pytest_charts
def test_every_finding_on_what_the_platform_installs_is_on_the_allowlist(platform_findings):
    allowed = load_allowlist()
    for stack, findings in platform_findings.items():
        new, _ = judge(findings, allowed)
        assert not new, f"findings on {stack} no allow-list entry covers:\n" + "\n".join(
            f"{f.check} {f.resource}" for f in new
        )
    # An entry is stale when no stack has its finding any more (some objects are one stack's only).
    _, stale = judge([f for findings in platform_findings.values() for f in findings], allowed)
    assert not stale, "allow-list patterns that match no finding any more (remove them):\n" + "\n".join(stale)


def _identity(finding: Finding) -> tuple[str, str, str]:
    """A finding without the object's namespace: an object the platform moves (node-exporter to a namespace of its
    own) keeps what it fails, which is not a finding the platform adds."""
    kind, _, rest = finding.resource.partition(".")
    return finding.source, finding.check, f"{kind}.{rest.partition('.')[2]}"


#: Findings on a chart's or Kubeflow's objects that upstream's defaults do not have, each with why the platform makes
#: it (checks listed object by object only).
ADDED_BY_THE_PLATFORM = {
    ("helm/kube-prometheus-stack", "CKV2_K8S_5", "RoleBinding.kube-prometheus-stack-grafana"): "Grafana's Role on "
    "the Secrets of monitoring only, where upstream binds a ClusterRole on every namespace's",
    ("helm/kube-prometheus-stack", "CKV_K8S_10", "Job.kube-prometheus-stack-crds-upgrade"): "the CRD upgrade job, "
    "off upstream, runs for seconds at an upgrade",
    ("helm/kube-prometheus-stack", "CKV_K8S_12", "Job.kube-prometheus-stack-crds-upgrade"): "the CRD upgrade job, "
    "off upstream, runs for seconds at an upgrade",
    ("kubeflow", "CKV_K8S_35", "Deployment.mysql"): "upstream's MySQL has an empty root password; the "
    "platform generates one, which reaches the server as an environment variable from a Secret",
}


@pytest.mark.subprocess
@pytest.mark.stack
@pytest_charts
def test_the_platform_adds_no_finding_to_upstreams_defaults_but_the_listed_ones(dev, platform_findings):
    """Per chart and for Kubeflow, the checks listed object by object (not those the platform does not follow
    anywhere): what the platform's values and changes fail that upstream's defaults pass. Prints the counts
    docs/security.md publishes."""
    upstream = scan(upstream_objects(dev))
    wide = {entry.check for entry in load_allowlist() if entry.objects == ("*",)}
    ours = Counter(f.source for f in platform_findings["dev"])
    theirs = Counter(f.source for f in upstream)
    listed_ours = Counter(f.source for f in platform_findings["dev"] if f.check not in wide)
    listed_theirs = Counter(f.source for f in upstream if f.check not in wide)
    table = {s: (ours[s], theirs[s], listed_ours[s], listed_theirs[s]) for s in sorted(set(ours) | set(theirs))}
    print("source: all checks ours/upstream, listed checks ours/upstream", *table.items(), sep="\n")
    added = {_identity(f) for f in platform_findings["dev"] if f.check not in wide} - {_identity(f) for f in upstream}
    added_to_upstream = sorted(a for a in added if a[0] != "platform")
    assert added_to_upstream == sorted(ADDED_BY_THE_PLATFORM), "\n".join(map(str, added_to_upstream))
