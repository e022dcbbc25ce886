"""The README's drawing of the program's parts agrees with the parts graph the preview's report draws from the
registered resources (components.tools.preview.parts.parts): every dependency between two parts, in dev or prod,
is drawn as a path from the part depended on, and every arrow between two parts is a dependency of one of them."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

#: The drawing's node ids, by the name of the part each stands for. `handle` (the ClusterHandle) is how the cluster
#: reaches the parts that use it: a part the drawing builds from it depends on the cluster.
PARTS = {
    "network": "network",
    "fsx": "storage-fsx",
    "cluster": "cluster",
    "handle": "cluster",
    "karpenter": "karpenter",
    "ingress": "ingress",
    "gpu": "gpu",
    "devices": "node-devices",
    "storage": "storage",
    "obs": "observability",
    "cm": "cert-manager",
    "kueue": "kueue",
    "kserve": "kserve",
    "kf": "kubeflow",
    "queues": "kueue-teams",
}


def drawn_edges() -> set[tuple[str, str]]:
    """(part depended on, part that depends on it) for every arrow between two parts of the README's drawing."""
    text = (REPO / "README.md").read_text()
    (chart,) = re.findall(r"```mermaid\n(.*?)```", text, flags=re.DOTALL)
    edges = set()
    for line in chart.splitlines():
        line = re.sub(r'--\s*"[^"]*"\s*-->', "-->", line)  # an arrow's label
        line = re.sub(r"\(\[[^\]]*\]\)|\[[^\]]*\]|\|[^|]*\|", "", line)  # captions and labels
        sides = re.split(r"\s*-\.?-*>\s*", line.strip())
        if len(sides) != 2:
            continue
        for source in sides[0].split("&"):
            for target in sides[1].split("&"):
                a, b = PARTS.get(source.strip()), PARTS.get(target.strip())
                if a and b and a != b:
                    edges.add((a, b))
    return edges


def reaches(edges: set[tuple[str, str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        here = todo.pop()
        for a, b in edges:
            if a == here and b not in seen:
                if b == goal:
                    return True
                seen.add(b)
                todo.append(b)
    return False


@pytest.mark.stack
def test_the_readme_draws_every_dependency_between_parts_and_no_other(dev, prod):
    from components.tools.preview.parts import parts

    found = [p for inventory in (dev, prod) for p in parts(inventory)]
    real = {(b, p.name) for p in found for b in p.depends_on}
    present = {p.name for p in found}
    drawn = drawn_edges()
    assert len(drawn) > 10  # the drawing was read
    missing = sorted(e for e in real if not reaches(drawn, *e))
    assert not missing, f"dependencies the README's drawing has no path for: {missing}"
    # (a part neither stack has, such as NodeDevices without Neuron or EFA pools, cannot be judged here)
    invented = sorted(e for e in drawn if e not in real and set(e) <= present)
    assert not invented, f"arrows of the README's drawing that no part depends on: {invented}"
