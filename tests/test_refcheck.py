"""The offline previews of dev and prod checked against the pinned upstream contracts with ../shared/tools/refcheck:
CRD schemas and CEL rules of every object, unknown Helm values keys, missing controller IAM actions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.ingress.iam import SHIELD_ACTIONS, WAF_ACTIONS
from components.kubeflow import entries, render
from tests.conftest import KUBEFLOW_TREE, REFCHECK
from tests.kueue_support import kueue_crds_file
from tests.once_per_run import Previewed

#: Charts refcheck knows, by the chart name a preview's helm/<release>.yaml gives.
CHECKED_CHARTS = {
    "karpenter",
    "gpu-operator",
    "kube-prometheus-stack",
    "aws-fsx-csi-driver",
    "aws-ebs-csi-driver",
    "aws-load-balancer-controller",
}

pytestmark = [pytest.mark.stack, pytest.mark.subprocess, pytest.mark.refcheck]


def refcheck_arguments(folder: Path, scratch: Path) -> list[str]:
    """Everything in a preview folder refcheck can check, as its command-line arguments."""
    arguments = [str(folder / "manifests")]
    for release_file in sorted((folder / "helm").glob("*.yaml")):
        release = yaml.safe_load(release_file.read_text())
        if release["chart"] in CHECKED_CHARTS:
            values = scratch / f"{release['chart']}-values.json"
            values.write_text(json.dumps(release["values"]))
            arguments += ["--helm-values", f"{release['chart']}={values}"]
    for name, pattern in (
        ("karpenter", "*karpenter-controller-controller.json"),
        ("alb", "*ingress-controller-controller.json"),
    ):
        for policy in sorted((folder / "iam").glob(pattern)):
            arguments += ["--iam-policy", f"{name}={policy}"]
    return arguments


def cert_manager_crds(scratch: Path) -> tuple[Path, int]:
    """cert-manager's CRDs at the pinned version (the chart installs them; refcheck's reference has none), from the
    upstream release manifest the Kubeflow tree carries at the same version (test_kubeflow_render holds the two
    versions together), so Kubeflow's Certificates and Issuers are checked against their schema."""
    rendered = render.render(KUBEFLOW_TREE, (entries.CERT_MANAGER,), cache_dir=scratch / "renders")
    crds = [o for o in rendered[entries.CERT_MANAGER.path] if o["kind"] == "CustomResourceDefinition"]
    path = scratch / "cert-manager-crds.yaml"
    path.write_text(yaml.safe_dump_all(crds))
    return path, len(crds)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_preview_passes_refcheck_with_no_error(stack, tmp_path, request):
    previewed: Previewed = request.getfixturevalue(f"{stack}_preview")  # the run's one preview of the stack
    assert previewed.status == 0, previewed.printed
    folder = previewed.folder
    crds, crd_count = cert_manager_crds(tmp_path)
    queue_crds, queue_crd_count = kueue_crds_file(tmp_path)  # Kueue's flavors and queues against its CRDs
    crd_count += queue_crd_count
    arguments = [str(crds), str(queue_crds), *refcheck_arguments(folder, tmp_path)]
    for checked in ("karpenter=", "gpu-operator=", "aws-fsx-csi-driver=", "aws-load-balancer-controller=", "alb="):
        assert checked in " ".join(arguments)
    result = subprocess.run(
        [sys.executable, str(REFCHECK), *arguments, "--k8s-version", "1.34,1.35", "-v"],
        capture_output=True,
        text=True,
        check=False,
    )
    report = result.stdout
    # The load balancer controller's WAF and Shield actions are granted only with `ingress.waf` / `ingress.shield`
    # (off in both stacks, and the chart's add-ons with them); refcheck counts every upstream action as required.
    off = set(WAF_ACTIONS) | set(SHIELD_ACTIONS)
    errors = [line for line in report.splitlines() if line.startswith("ERROR")]
    expected = tuple(f"missing upstream controller action {action} (upstream: Statement[2])" for action in off)
    unexpected = [line for line in errors if not line.endswith(expected)]
    assert unexpected == [], "\n".join(unexpected)
    assert len(errors) == len(off)
    assert report.strip().splitlines()[-1].endswith(f" {len(off)} errors")
    assert [line for line in report.splitlines() if line.startswith("WARN")] == []  # e.g. a map given as a scalar
    assert "32 upstream actions checked, 0 missing" in report  # Karpenter controller
    assert f"80 upstream actions checked, {len(off)} missing" in report  # load balancer controller
    controller = yaml.safe_load((folder / "helm" / "aws-load-balancer-controller.yaml").read_text())["values"]
    assert (controller["enableWaf"], controller["enableWafv2"], controller["enableShield"]) == (False, False, False)
    objects = [d for f in (folder / "manifests").glob("*.yaml") for d in yaml.safe_load_all(f.read_text())]
    assert {"NodePool", "EC2NodeClass", "ValidatingAdmissionPolicy", "Deployment"} <= {o["kind"] for o in objects}
    assert f"refcheck: {len(objects) + crd_count} objects, {len(off)} errors" in report  # every object was checked
