"""The package as a library: the docs' program that builds the parts (examples/library), previewed from this tree and
from a wheel installed into a fresh virtualenv, away from the repository, as a user's project gets it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO

#: The offline preview's command (python -m ...): the one name this test takes from the package's tools, under the
#: name library users import it by.
PREVIEW = "eks_ml_platform.preview"
EXAMPLE = REPO / "examples" / "library"
DASHBOARDS = REPO / "components" / "observability" / "dashboards"
PARTS = {
    "eksml:network:Network",
    "eksml:cluster:Cluster",
    "eksml:storage:Storage",
    "eksml:karpenter:Karpenter",
    "eksml:ingress:Ingress",
    "eksml:gpu:GpuStack",
    "eksml:observability:Observability",
}


def test_the_docs_show_the_example_program_exactly():
    program = (EXAMPLE / "__main__.py").read_text()
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    blocks = [block for page in pages for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)]
    assert program in blocks


def preview(
    python: str | Path,
    project: Path,
    out: Path,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    command: str = PREVIEW,
) -> str:
    """Preview the project's dev stack; its printed report. Fails with the output unless it exits 0."""
    result = subprocess.run(
        [str(python), "-m", command, "--project-dir", str(project), "--stack", "dev", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def reaches(resources: dict[str, dict[str, Any]], start: dict[str, Any], goal: dict[str, Any]) -> bool:
    """Whether `start` waits for `goal` (and so is deleted before it), through its recorded dependencies."""
    todo, seen = list(start["dependencies"]), set()
    while todo:
        urn = todo.pop()
        if urn == goal["urn"]:
            return True
        if urn not in seen and urn in resources:
            seen.add(urn)
            todo.extend(resources[urn]["dependencies"])
    return False


def check_the_example_preview(out: Path, printed: str) -> None:
    assert "no violations" in printed
    resources = {r["urn"]: r for r in json.loads((out / "resources.json").read_text())["resources"]}

    def one(type_: str, name: str) -> dict[str, Any]:
        (found,) = [r for r in resources.values() if r["type"] == type_ and r["name"] == name]
        return found

    assert {r["type"] for r in resources.values() if r["type"].startswith("eksml:")} == PARTS | {
        "eksml:iam:WorkloadRole"
    }
    # The dashboards come from the package's data files (missing from 0.1's wheel: FileNotFoundError).
    shipped = {path.stem: path.read_text() for path in DASHBOARDS.glob("*.json")}
    maps = {
        r["inputs"]["metadata"]["name"]: r["inputs"]["data"]
        for r in resources.values()
        if r["type"] == "kubernetes:core/v1:ConfigMap" and r["name"].startswith("observability-dashboard-")
    }
    assert len(shipped) >= 3
    assert maps == {f"dashboard-{name}": {f"{name}.json": text} for name, text in shipped.items()}
    # Wired as the stack wires the parts: the VPC is its own, the system nodes leave before its NAT on destroy, the
    # cluster knows its creator, and the monitoring namespace goes while the load balancer controller still runs.
    assert {r["inputs"]["ownsVpc"] for r in resources.values() if r["type"] == "pulumi-python:dynamic:Resource"} == {
        True
    }
    nodes = one("aws:eks/nodeGroup:NodeGroup", "cluster-system")
    assert any(reaches(resources, nodes, nat) for nat in resources.values() if nat["type"].endswith(":NatGateway"))
    assert one("eks:index:Cluster", "cluster-eks")["inputs"]["clusterTags"]["eksml.io/created-by"].startswith("arn:")
    monitoring = one("kubernetes:core/v1:Namespace", "observability-namespace")
    assert reaches(resources, monitoring, one("kubernetes:helm.sh/v3:Release", "ingress"))
    # What the program asks for
    cluster = one("eks:index:Cluster", "cluster-eks")
    assert cluster["inputs"]["name"] == "ml-eu"
    assert cluster["inputs"]["endpointPublicAccess"] is False
    assert one("aws:kms/key:Key", "cluster-secrets")["protect"] is True
    private = [r for r in resources.values() if r["type"] == "aws:ec2/subnet:Subnet" and "-private-" in r["name"]]
    assert {subnet["inputs"]["tags"]["karpenter.sh/discovery"] for subnet in private} == {"ml-eu"}
    trust = json.loads(one("aws:iam/role:Role", "my-controller-role")["inputs"]["assumeRolePolicy"])
    (statement,) = trust["Statement"]
    assert sorted(statement["Condition"]["StringEquals"].values()) == [
        "sts.amazonaws.com",
        "system:serviceaccount:tools:my-controller",
    ]


@pytest.mark.subprocess
def test_the_example_previews_from_this_tree(tmp_path):
    """The repository's own tools (`components`) run the example, which imports the package as `eks_ml_platform`:
    both names are one package while it runs."""
    out = tmp_path / "out"
    check_the_example_preview(out, preview(sys.executable, EXAMPLE, out, cwd=REPO, command="components.preview"))


# ------------------------------------------------------------------------------------------------------ the wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from what a clone holds (the package, pyproject.toml, README.md)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(REPO / "components", source / "components", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(work / "dist"), str(source)],
        check=True,
        cwd=work,
    )
    (built,) = (work / "dist").glob("eks_ml_platform-*.whl")
    return built


@pytest.mark.subprocess
def test_the_wheel_ships_every_data_file_of_the_package_and_its_types(wheel):
    in_tree = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "components").rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc")
    }
    assert "components/py.typed" in in_tree
    assert "components/observability/dashboards/karpenter.json" in in_tree
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    assert in_tree - shipped == set()
    assert {"eks_ml_platform/" + path.removeprefix("components/") for path in in_tree} - shipped == set()


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A fresh virtualenv with the wheel installed, not editable, and the environment to run it in. The dependencies
    come from the package index (or pip's cache)."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV", "MYPYPATH")}
    home = tmp_path_factory.mktemp("installed")
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, cwd=home, env=env)
    python = venv / "bin" / "python"
    # --no-compile: the dependencies' modules are compiled when first imported rather than all at install (the provider
    # SDKs hold thousands a preview never imports): a quarter of this fixture's time, and nothing the tests check.
    install = [str(python), "-m", "pip", "install", "--quiet", "--no-compile", str(wheel)]
    subprocess.run(install, check=True, cwd=home, env=env)
    where = subprocess.run(
        [str(python), "-c", "import eks_ml_platform; print(eks_ml_platform.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=home,
        env=env,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    assert not Path(where).is_relative_to(REPO), where
    return python, env


@pytest.mark.subprocess
def test_the_example_previews_from_the_wheel_installed_in_a_fresh_virtualenv(installed, tmp_path):
    """The project runs from a folder of its own, away from the repository, and has a `components/` package of its
    own, which the Pulumi language host puts first on the path: the library's import name is not hidden by it."""
    python, env = installed
    project = tmp_path / "library"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    (project / "components").mkdir()
    (project / "components" / "__init__.py").write_text('"""The project\'s own components."""\n')
    out = tmp_path / "out"
    check_the_example_preview(out, preview(python, project, out, cwd=tmp_path, env=env))


@pytest.mark.subprocess
def test_a_type_checker_sees_the_installed_packages_classes(installed, tmp_path):
    """py.typed and the TYPE_CHECKING exports: without either, mypy takes `from eks_ml_platform import ...` as Any."""
    pytest.importorskip("mypy")
    python, env = installed
    program = tmp_path / "program.py"
    program.write_text(
        "from eks_ml_platform import Cluster, ClusterArgs\n\nreveal_type(Cluster)\nreveal_type(ClusterArgs)\n"
    )
    # The provider SDKs are left out: checking them costs minutes and gigabytes, and says nothing of this package.
    sdks = "pulumi_aws.*,pulumi_eks.*,pulumi_kubernetes.*,pulumi_random.*,boto3.*,botocore.*"
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nfollow_imports = silent\n[mypy-{sdks}]\nfollow_imports = skip\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--python-executable",
            str(python),
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(program),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    revealed = re.findall(r'Revealed type is "(.*)"', result.stdout)
    assert len(revealed) == 2, result.stdout
    assert "Any" not in revealed, result.stdout
    assert revealed[0].endswith("-> eks_ml_platform.cluster.component.Cluster")
    assert "owns_vpc: bool," in revealed[1]
    assert revealed[1].endswith("-> eks_ml_platform.cluster.args.ClusterArgs")


def test_a_program_run_by_the_preview_gets_the_same_package_under_either_name_and_leaves_it_whole():
    """The preview runs a user's program (which imports `eks_ml_platform`) with its own modules (`components`): one
    ConfigError, one set of classes, and afterwards the package still reads its own data files."""
    import importlib.resources

    import components
    import components.images
    from components.config.errors import ConfigError
    from components.tools.preview.program import one_package

    spec = components.__spec__
    with one_package():
        # imported by name: a type checker does not follow the installed package's import hook
        aliased = importlib.import_module("eks_ml_platform.images")
        AliasedError = importlib.import_module("eks_ml_platform.config.errors").ConfigError

        assert aliased is components.images
        assert AliasedError is ConfigError
    assert components.__spec__ is spec
    assert not hasattr(components.images, "__path__")  # a module stays a module
    assert importlib.resources.files("components").joinpath("image_architectures.json").read_text()
