"""The preview's `report.html`: written by every preview, holding the figures the text output gives (the idle total,
each pool's ceiling, the destroy minutes, every part), loading nothing from the network, and never left stale by a
preview that failed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components.tools.preview.inventory import Inventory, Recorded
from components.tools.preview.parts import implied, levels, parts
from tests.conftest import REPO
from tests.once_per_run import Previewed

STACK_URN = "urn:pulumi:s::p::"


def _resource(name: str, type_: str, parent: Recorded | None = None, *, depends: tuple[Recorded, ...] = ()) -> Recorded:
    prefix = f"{parent.urn.rsplit('::', 1)[0]}$" if parent else STACK_URN
    return Recorded(
        urn=f"{prefix}{type_}::{name}",
        type=type_,
        name=name,
        parent=parent.urn if parent else None,
        inputs={},
        dependencies=tuple(d.urn for d in depends),
        protect=False,
        retain_on_delete=False,
        deleted_with=None,
    )


def test_a_part_depends_on_the_parts_its_resources_depend_on_and_nothing_outside_the_parts():
    provider = _resource("aws", "pulumi:providers:aws")
    network = _resource("network", "eksml:network:Network")
    vpc = _resource("network-vpc", "aws:ec2/vpc:Vpc", network, depends=(provider,))
    cluster = _resource("cluster", "eksml:cluster:Cluster")
    control_plane = _resource("cluster-eks", "aws:eks/cluster:Cluster", cluster, depends=(vpc,))
    k8s = _resource("cluster-k8s", "pulumi:providers:kubernetes", cluster)
    karpenter = _resource("karpenter", "eksml:karpenter:Karpenter")
    release = _resource("karpenter", "kubernetes:helm.sh/v3:Release", karpenter)
    release = Recorded(**{**release.__dict__, "provider": k8s.urn})  # the cluster's provider: an edge to cluster
    pool = _resource("karpenter-pool", "kubernetes:karpenter.sh/v1:NodePool", karpenter, depends=(release, vpc))
    inventory = Inventory([provider, network, vpc, cluster, control_plane, k8s, karpenter, release, pool], {})

    found = {p.name: p for p in parts(inventory)}

    assert set(found) == {"network", "cluster", "karpenter"}
    assert found["network"].depends_on == ()
    assert found["cluster"].depends_on == ("network",)
    assert found["karpenter"].depends_on == ("cluster", "network")
    assert (found["network"].resources, found["cluster"].resources, found["karpenter"].resources) == (1, 2, 2)
    assert levels(found.values()) == {"network": 0, "cluster": 1, "karpenter": 2}
    # karpenter reaches network through cluster: the direct edge is drawn faint
    assert implied(found.values()) == {("karpenter", "network")}


def test_parts_that_depend_on_each_other_still_get_columns():
    a = _resource("a", "eksml:x:A")
    b = _resource("b", "eksml:x:B")
    in_a = _resource("a-thing", "aws:s3/bucket:Bucket", a)
    in_b = _resource("b-thing", "aws:s3/bucket:Bucket", b, depends=(in_a,))
    in_a = Recorded(**{**in_a.__dict__, "dependencies": (in_b.urn,)})
    # the edge that closes the circle is not followed: one part goes first, the other after it
    assert sorted(levels(parts(Inventory([a, b, in_a, in_b], {}))).values()) == [0, 1]


# ---------------------------------------------------------------------------------------- a whole preview


@pytest.fixture(scope="module")
def dev_report(dev_preview: Previewed) -> tuple[Path, str]:
    assert dev_preview.status == 0, dev_preview.printed
    return dev_preview.folder, dev_preview.printed


def _text(page: str) -> str:
    """The page's text, as a reader (or a search) sees it: tags dropped, entities decoded, spaces collapsed."""
    import html

    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.mark.stack
@pytest.mark.subprocess
def test_the_report_holds_the_idle_total_and_ceiling_the_preview_prints(dev_report):
    out, printed = dev_report
    headline = re.search(r"^Cost: (about \$[\d,]+/month idle; up to \$[\d,]+/month .*)$", printed, flags=re.M)
    assert headline, printed
    assert headline.group(1) in _text((out / "report.html").read_text())


@pytest.mark.stack
@pytest.mark.subprocess
def test_the_report_holds_each_pools_ceiling_and_the_idle_lines_the_cost_command_prints(dev_report, capsys):
    from components.tools.cost.__main__ import main as cost

    out, _ = dev_report
    assert cost(["--stack", "dev", "--project-dir", str(REPO), "--preview", str(out)]) == 0
    table = capsys.readouterr().out
    text = _text((out / "report.html").read_text())
    pools = re.findall(r"^  ([\w-]+): .*; cheapest .* (\$[\d,.]+); dearest .* (\$[\d,.]+)$", table, flags=re.M)
    assert len(pools) == 2, table
    for pool, cheapest, dearest in pools:
        assert f"ceiling of pool {pool} " in text
        assert f"{cheapest} - {dearest}" in text
    total = re.search(r"^  total +(\$[\d,.]+ - \$[\d,.]+)$", table, flags=re.M)
    assert total, table
    assert f"idle total {total.group(1)}" in text
    every_pool = re.search(r"^  all pools at their limits +(\$[\d,.]+)$", table, flags=re.M)
    assert every_pool, table
    assert f"all pools at their limits {every_pool.group(1)}" in text
    for item in re.findall(r"^  (platform pods on `[\w-]+`)", table, flags=re.M):  # the platform's own footprint
        assert item in text


@pytest.mark.stack
@pytest.mark.subprocess
def test_the_report_holds_the_destroy_estimate_and_every_part(dev_report, dev):
    from components.tools.preview import destroy_estimate

    out, _ = dev_report
    page = (out / "report.html").read_text()
    text = _text(page)
    said = destroy_estimate.report(destroy_estimate.estimate(dev), "dev")
    minutes = re.search(r"\d+\.\d minutes in \d+ levels", said)
    assert minutes, said
    assert f"pulumi destroy: {minutes.group(0)}" in text
    lines = said.splitlines()
    path = lines[2 : lines.index("Longest chain of delete levels (each must be deleted before the next):")]
    assert path, said
    for line in path:  # each step of the critical path, on the timeline and in its table
        step = re.match(r"^ +\d+ +[\d.]+ min +(\d+) s  (\S+) +([^\s,]+)", line)
        assert step, line
        kind = step.group(3).rsplit(":", 1)[-1]
        assert f"{step.group(2)} ({kind}, {step.group(1)} s)" in text
    # the headline's levels that take time are the bars drawn, one each, and no two bars share a label
    timed = re.search(r"in \d+ levels, (\d+) of which take time", text)
    assert timed, text
    figure = page[page.index('id="destroy"') : page.index("</figure>", page.index('id="destroy"'))]
    bars = re.findall(r">([^<>]+ \(\w+, \d+ s\))</text>", figure)
    assert len(bars) == len(path) == int(timed.group(1))
    assert len(set(bars)) == len(bars), bars
    resources = json.loads((out / "resources.json").read_text())["resources"]
    names = {r["name"] for r in resources if r["parent"] is None and r["type"].startswith("eksml:")}
    assert len(names) >= 8
    figure = page[page.index('id="parts"') : page.index("</figure>", page.index('id="parts"'))]
    for name in names:  # drawn in the graph (each line of a box is an SVG text), not only listed
        assert f">{name}</text>" in figure


@pytest.mark.stack
@pytest.mark.subprocess
def test_the_report_is_one_self_contained_page(dev_report):
    out, _ = dev_report
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 3
    for fetching in ("<script", "<link", "<img", "<iframe", "<object", "<embed", "@import"):
        assert fetching not in page
    # references only within the page (the SVGs' clip paths), never to a file or a host
    references = re.findall(r'(?:src|href)="([^"]*)"', page) + re.findall(r"url\(([^)]*)\)", page)
    assert references
    assert all(ref.startswith("#") for ref in references), references


@pytest.mark.stack
def test_a_failed_preview_leaves_no_report_of_an_earlier_one(tmp_path):
    from components.tools.preview import main

    (tmp_path / "Pulumi.yaml").write_text((REPO / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.broken.yaml").write_text("config:\n  aws:region: us-west-2\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("<p>the report of an earlier preview</p>")
    assert main(["--stack", "broken", "--out", str(out), "--project-dir", str(tmp_path)]) == 2
    assert not (out / "report.html").exists()


@pytest.mark.stack  # draws a report: matplotlib's first figure of a session lists the system's fonts
def test_a_stack_without_prices_gets_a_report_that_says_what_is_missing_rather_than_zero():
    from datetime import date

    from components.tools.cost import PINNED, estimate
    from components.tools.preview import destroy_estimate
    from components.tools.preview.report import render
    from tests.preflight_world import platform_config

    config = platform_config("dev", {"aws:region": "eu-west-1", "network": {"cidr": "10.20.0.0/16"}})
    cost = estimate(config, PINNED, on=date(2026, 11, 1))
    assert cost.missing
    network = _resource("network", "eksml:network:Network")
    inventory = Inventory([network, _resource("network-vpc", "aws:ec2/vpc:Vpc", network)], {})
    page = render(
        inventory, project="eks-ml-platform", stack="dev", cost=cost, destroy=destroy_estimate.estimate(inventory)
    )
    text = _text(page)
    assert f"cost unknown: {cost.missing[0]}" in text
    assert "idle total n/a" in text
    assert f"Missing from the price table (left out of the sums, not counted as $0): {cost.missing[0]}" in text


def test_the_cost_figure_draws_the_total_as_its_legend_says_cheapest_dark_then_dearest_light():
    from datetime import date

    from components.tools.cost import PINNED, estimate
    from components.tools.preview.report import cost_bars
    from tests.preflight_world import platform_config

    cost = estimate(platform_config("dev"), PINNED, on=date(2026, 11, 1))
    *_, (label, dark, light, note) = cost_bars(cost)
    assert label == "idle + every pool at its limit"
    cheapest = float(cost.idle_high or 0) + sum(float(p.cheapest.monthly) for p in cost.pools if p.cheapest)
    assert dark == pytest.approx(cheapest)  # dark: the limits filled with the cheapest types, as on every pool row
    assert dark + light == pytest.approx(float(cost.ceiling or 0))  # light: on to the dearest, the ceiling
    assert note == f"${cost.ceiling:,.2f}"


@pytest.mark.stack  # draws a report
def test_the_report_is_titled_with_the_project_and_the_stack():
    from components.tools.preview import destroy_estimate
    from components.tools.preview.report import render

    network = _resource("network", "eksml:network:Network")
    inventory = Inventory([network], {})
    page = render(
        inventory, project="team-vision", stack="prod", cost=None, destroy=destroy_estimate.estimate(inventory)
    )
    assert "<title>Offline preview of team-vision, stack &#x27;prod&#x27;</title>" in page


def test_a_release_is_found_by_the_name_helm_gives_it_and_a_missing_or_repeated_one_is_an_error():
    def release(logical: str, name: str) -> Recorded:
        found = _resource(logical, "kubernetes:helm.sh/v3:Release")
        return Recorded(**{**found.__dict__, "inputs": {"name": name}})

    inventory = Inventory([release("gpu-operator", "gpu-operator"), release("a", "twice"), release("b", "twice")], {})
    assert inventory.release("gpu-operator").name == "gpu-operator"
    with pytest.raises(LookupError, match="0 Helm releases named 'karpenter'"):
        inventory.release("karpenter")
    with pytest.raises(LookupError, match="2 Helm releases named 'twice'"):
        inventory.release("twice")
