"""The cluster's own admission and access on the real API server, against what the offline
checks say: our ValidatingAdmissionPolicies' verdict and message on the pods the docs describe
(`components/tools/cluster_model/admission.py`), Pod Security admission on every pod the platform runs
(`components/tools/cluster_model/pod_security.py`), and RBAC as SubjectAccessReviews
(`components/tools/cluster_model/rbac.py`).

Only etcd, the API server and the controller manager's ClusterRole aggregation run, in a network namespace with
only loopback up (engine/cluster.py); the dev stack's offline preview gives every object (engine/access.py).
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.tools.cluster_model import Platform, load
from components.tools.cluster_model.admission import notebook_pods, trainer_pods
from components.tools.cluster_model.pipeline_pods import pipeline_pods
from components.tools.cluster_model.pod_security import ENFORCE, baseline_failures, restricted_failures
from components.tools.cluster_model.rbac import cluster_wide_secret_access, secret_holders
from components.tools.cluster_model.workloads import pod_template
from engine import access
from engine.access import Access, Subject, Verdict
from engine.cluster import Box, netns_exec
from engine.kube import Kube
from tests.conftest import REPO

from .admission_samples import SAMPLES, SECOND_TEAM, Objects, judged, offline_verdict, second_team, without
from .conftest import Timings

pytestmark = [pytest.mark.engine, pytest.mark.subprocess]

CHARTS = REPO.parent / "shared" / "reference" / "charts"
#: The aggregation controller fills Kubeflow's aggregated ClusterRoles (kubeflow-edit, ...), which RBAC reads.
CONTROLLERS = "clusterrole-aggregation-controller"


@pytest.fixture(scope="module")
def platform(dev_preview: Path) -> Platform:
    return load([dev_preview], CHARTS if CHARTS.is_dir() else None)


@pytest.fixture(scope="module")
def objects(platform: Platform) -> Objects:
    return [obj for _, obj in platform.objects]


@pytest.fixture(scope="module")
def kube(
    engine_bin: Path, objects: Objects, tmp_path_factory: pytest.TempPathFactory, timings: Timings
) -> Iterator[Kube]:
    box = Box(engine_bin, tmp_path_factory.mktemp("admission-box"))
    try:
        with timings.timed("admission: etcd, API server, aggregation"):
            kube = box.start_api()
            box.start_controller_manager(CONTROLLERS)
        with timings.timed("admission: apply the preview's objects"):
            first, then = access.to_apply([*objects, *second_team(objects)])
            access.apply(kube, first)
            kube.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
            access.apply(kube, then)
            access.wait_for("kubeflow-edit aggregated", lambda: _rules(kube, "kubeflow-edit"))
        yield kube
    finally:
        started = list(box.processes)
        box.stop()
    # Everything the box started is gone, the namespace with it.
    assert started
    assert all(p.popen.poll() is not None for p in started)
    listed = subprocess.run([*netns_exec(box.namespace)[:2], "list"], capture_output=True, text=True, check=True).stdout
    assert box.namespace not in listed


def _rules(kube: Kube, role: str) -> bool:
    return bool(yaml.safe_load(kube.kubectl("get", "clusterrole", role, "-o", "json")).get("rules"))


# -- the samples the docs describe (admission_samples.py) -----------------------------------------------------------


def _ensure_accounts(kube: Kube, pods: list[dict[str, Any]]) -> None:
    """The accounts the pods run as (those the profile controller makes are made already; pipeline-runner is the
    pipelines' profile controller's): the ServiceAccount admission plugin refuses a pod whose account is missing."""
    wanted = {
        (p["metadata"]["namespace"], p["spec"].get("serviceAccountName") or "default")
        for p in pods
        if p.get("kind", "Pod") == "Pod"
    }
    if wanted:
        access.apply(kube, [access.service_account(ns, name) for ns, name in sorted(wanted)])


@pytest.mark.parametrize(("doc", "what", "build", "refused"), SAMPLES, ids=[f"{d}: {w}" for d, w, *_ in SAMPLES])
def test_admission_policies_judge_the_docs_samples_as_our_evaluator_does(
    kube: Kube,
    objects: Objects,
    doc: str,
    what: str,
    build: Callable[[Objects], list[dict[str, Any]]],
    refused: bool,
) -> None:
    objects = [*objects, *second_team(objects)]
    samples = build(objects)
    assert samples, f"{doc}: no {what} in the dev preview"
    _ensure_accounts(kube, samples)
    probe = without("tolerations")(objects)[0]
    # loaded once the policy (not anything else, such as a missing account) refuses what it must
    access.wait_for("the policies loaded", lambda: "ValidatingAdmissionPolicy" in access.dry_run(kube, probe).message)
    real = [access.dry_run(kube, s) for s in samples]
    offline = [offline_verdict(objects, s) for s in samples]
    disagreements = [
        f"{s['metadata']['name']}: API server {'admits' if r.admitted else 'refuses: ' + r.message}; offline "
        f"{'admits' if not o else 'refuses: ' + '; '.join(o)}"
        for s, r, o in zip(samples, real, offline, strict=True)
        if r.admitted != (not o) or not (r.admitted or any(m in r.message for m in o))
    ]
    assert not disagreements, f"{doc}, {what}:\n" + "\n".join(disagreements)
    assert all(r.admitted != refused for r in real), f"{doc} says {what} is {'refused' if refused else 'admitted'}"


# -- Pod Security admission on every platform pod -------------------------------------------------------------------


def platform_pods(objects: Objects) -> list[dict[str, Any]]:
    """A pod of every template the platform runs, and of every documented workflow's, in its namespace."""
    pods = []
    for obj in objects:
        if (template := pod_template(obj)) is not None and obj.get("kind") != "InferenceService":
            meta = {**(template.get("metadata") or {}), "name": f"{obj['kind'].lower()}-{obj['metadata']['name']}"}
            meta["namespace"] = obj["metadata"].get("namespace") or "default"
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]})
    for make in (trainer_pods, notebook_pods, pipeline_pods):
        pods += judged(make)(objects)
    return pods


def _pod_security_offline(objects: Objects, pod: Mapping[str, Any]) -> list[str]:
    levels = {
        o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(ENFORCE)
        for o in objects
        if o.get("kind") == "Namespace"
    }
    check = {"baseline": baseline_failures, "restricted": restricted_failures}.get(
        str(levels.get(pod["metadata"]["namespace"]))
    )
    return check(pod["spec"]) if check else []


def test_pod_security_admits_every_platform_pod_as_our_evaluator_says(
    kube: Kube, objects: Objects, timings: Timings
) -> None:
    pods = platform_pods(objects)
    assert len(pods) > 50, "the dev preview's pods were not found"
    _ensure_accounts(kube, pods)
    with timings.timed(f"admission: dry-run {len(pods)} platform pods"):
        real: list[Verdict] = [access.dry_run(kube, p) for p in pods]
    found = []
    for pod, verdict in zip(pods, real, strict=True):
        offline = _pod_security_offline(objects, pod)
        where = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if not verdict.admitted:
            found.append(f"{where}: refused ({'offline agrees' if offline else 'offline admits'}): {verdict.message}")
        elif offline:
            found.append(f"{where}: admitted by Pod Security, offline refuses: {offline}")
    assert not found, "\n".join(found)
    # and both refuse what the level forbids: each platform pod made privileged, in an enforcing namespace
    enforcing = [p for p in pods if p["metadata"]["namespace"] in _enforced(objects)]
    assert enforcing, "no platform pod runs in a namespace that enforces a Pod Security level"
    for pod in enforcing[:3]:
        privileged = copy.deepcopy(pod)
        # (alone: the API server's validation refuses privileged with allowPrivilegeEscalation false before admission)
        privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
        verdict = access.dry_run(kube, privileged)
        assert not verdict.admitted, verdict
        assert "violates PodSecurity" in verdict.message, verdict
        assert _pod_security_offline(objects, privileged), "offline admits a privileged container"


def _enforced(objects: Objects) -> set[str]:
    """Namespaces that enforce baseline or restricted."""
    return {
        o["metadata"]["name"]
        for o in objects
        if o.get("kind") == "Namespace"
        and (o["metadata"].get("labels") or {}).get(ENFORCE) in ("baseline", "restricted")
    }


# -- RBAC: teams keep to their namespaces, Secrets stay with their holders ----------------------------------------


def _teams(objects: Objects) -> dict[str, list[Subject]]:
    """Each Profile's namespace → its people (the owner, contributors as KFAM binds them) and service accounts."""
    teams: dict[str, list[Subject]] = {}
    for profile in (o for o in objects if o.get("kind") == "Profile"):
        ns = profile["metadata"]["name"]
        people = [Subject.of(profile["spec"]["owner"])]
        people += [
            Subject.of(s)
            for b in objects
            if b.get("kind") == "RoleBinding" and b["metadata"].get("namespace") == ns
            for s in b.get("subjects") or ()
            if s.get("kind") in ("User", "Group")
        ]
        accounts = {"default", "default-editor", "default-viewer"}
        accounts |= {
            o["metadata"]["name"]
            for o in objects
            if o.get("kind") == "ServiceAccount" and o["metadata"].get("namespace") == ns
        }
        teams[ns] = people + [Subject.account(ns, a) for a in sorted(accounts)]
    return teams


def test_a_teams_people_and_accounts_keep_to_their_namespace(kube: Kube, objects: Objects) -> None:
    objects = [*objects, *second_team(objects)]
    namespaces = sorted({o["metadata"]["name"] for o in access.to_apply(objects)[0] if o["kind"] == "Namespace"})
    teams = _teams(objects)
    assert len(teams) == 2, "the dev preview has no Kubeflow team"
    assert sum(s.user.endswith("@example.org") for s in teams[SECOND_TEAM]) == 3, "the contributors were not found"
    questions = [
        Access(subject, verb, resource, ns)
        for team, subjects in teams.items()
        for subject in subjects
        for ns in [*namespaces, ""]
        if ns != team
        for verb in ("get", "list")
        for resource in ("pods", "secrets", "configmaps")
    ]
    # Control: the people do work in their own namespace, so a "no" above is RBAC's, not a missing binding.
    own = [
        Access(s, "list", "pods", team)
        for team, subjects in teams.items()
        for s in subjects
        if not s.user.startswith("system:")
    ]
    own += [Access(subjects[0], "list", "secrets", team) for team, subjects in teams.items()]
    answers = access.allowed(kube, [*questions, *own])
    assert [q.subject.label for q in own if not answers[q]] == [], "cannot work in their own team's namespace"
    leaks = [
        f"{q.subject.label} may {q.verb} {q.resource} in {q.namespace or 'every namespace'}"
        for q in questions
        if answers[q]
    ]
    assert not leaks, "\n".join(leaks)


def test_only_the_listed_controllers_read_secrets_cluster_wide(kube: Kube, objects: Objects) -> None:
    candidates = {
        Subject.of(s)
        for b in objects
        if b.get("kind") in ("ClusterRoleBinding", "RoleBinding")
        for s in b.get("subjects") or ()
    }
    candidates |= {
        Subject.account(o["metadata"].get("namespace", "default"), o["metadata"]["name"])
        for o in objects
        if o.get("kind") == "ServiceAccount"
    }
    questions = [Access(s, "list", "secrets", "") for s in candidates]
    answers = access.allowed(kube, questions)
    real = {q.subject.label for q in questions if answers[q]}
    offline = {who for who, verbs in cluster_wide_secret_access(objects).items() if "list" in verbs}
    assert real == offline, f"the API server: {sorted(real)}; rbac.py: {sorted(offline)}"
    documented = set(secret_holders())
    assert real <= documented, f"not documented in rbac.secret_holders(): {sorted(real - documented)}"
    assert real, "no controller lists Secrets cluster-wide: the RBAC was not applied"
