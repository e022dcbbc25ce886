"""The package's files: the `components/` folder, installed under two names.

`eks_ml_platform` is the name library users import: a project of their own with a `components/` folder of its own
cannot shadow it. `components` is the same folder under the name programs written against 0.2 and earlier import,
and the name this repository's own program and tests use. The package imports itself only relatively, so each name
is whole on its own. Everything else about the distribution is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

FOLDER = "components"
NAME = "eks_ml_platform"
#: Every folder of the package, data-only ones (dashboards, tables) too.
folder_packages = find_namespace_packages(include=[FOLDER, f"{FOLDER}.*"], exclude=["*.__pycache__"])
#: Data files at any depth of the package (dashboards, pinned tables), and the marker that it ships its types.
DATA = ["**/*.json", "**/*.yaml", "py.typed"]

setup(
    packages=[*folder_packages, *(NAME + package.removeprefix(FOLDER) for package in folder_packages)],
    package_dir={NAME: FOLDER},
    package_data={FOLDER: DATA, NAME: DATA},
)
