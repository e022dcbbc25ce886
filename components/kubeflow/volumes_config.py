"""`kubeflow.volumes`: the sizes of Kubeflow's volumes, each a Kubernetes quantity within gp3's sizes, and the
claims they size."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, StrictStr

from ..config.types import ConfigModel

#: The claims `kubeflow.volumes` sizes, by key: (namespace, claim name) as upstream renders them, and the component
#: that must be installed for the key to mean anything. The Hub's registry claim lives in `hubRegistryTeam`'s namespace.
VOLUME_CLAIMS: dict[str, tuple[str | None, str, str]] = {
    "pipelines_database": ("kubeflow", "mysql-pv-claim", "Pipelines"),
    "pipelines_artifacts": ("kubeflow", "seaweedfs-pvc", "SeaweedFS (pipelines.artifacts: seaweedfs)"),
    "katib_database": ("kubeflow", "katib-mysql", "Katib (components.katib)"),
    "hub_catalog_database": ("kubeflow", "model-catalog-postgres", "the Hub (components.hub)"),
    "hub_registry_database": (None, "metadata-postgres", "the Hub's model registry (hubRegistryTeam)"),
}
#: EBS gp3's size range (Amazon EBS volume types): 1 GiB to 16 TiB.
_GP3_MIN, _GP3_MAX = 2**30, 16 * 2**40


_STORAGE_SIZE = re.compile(r"([0-9]+)(Ki|Mi|Gi|Ti|k|M|G|T)?")
_STORAGE_UNITS = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_STORAGE_UNITS.update({"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40})


def _volume_size(value: str) -> str:
    """A Kubernetes quantity of bytes (whole numbers: a claim's size has no fractions) within gp3's sizes."""
    match = _STORAGE_SIZE.fullmatch(value)
    if match is None:
        raise ValueError(f"expected a Kubernetes quantity of bytes like '50Gi' or '100G', got {value!r}")
    size = int(match[1]) * _STORAGE_UNITS[match[2]]
    if not _GP3_MIN <= size <= _GP3_MAX:
        raise ValueError(f"{value!r} is outside the sizes a gp3 volume may have (1Gi to 16Ti)")
    return value


VolumeSize = Annotated[StrictStr, AfterValidator(_volume_size)]


class Volumes(ConfigModel):
    """Sizes of Kubeflow's volumes (Kubernetes quantities, 1Gi to 16Ti); none: upstream's size. A claim grows in place
    (the gp3 classes allow expansion) and never shrinks: Kubernetes refuses a smaller request, so lowering a size here
    fails the update."""

    pipelines_database: VolumeSize | None = Field(
        default=None, description="Pipelines' MySQL (run and metadata history); none: upstream's 20Gi"
    )
    pipelines_artifacts: VolumeSize | None = Field(
        default=None,
        description="SeaweedFS, Pipelines' artifacts with `pipelines.artifacts: seaweedfs` (refused with s3); none: "
        "upstream's 20Gi",
    )
    katib_database: VolumeSize | None = Field(
        default=None, description="Katib's MySQL (needs `components.katib`); none: upstream's 10Gi"
    )
    hub_catalog_database: VolumeSize | None = Field(
        default=None, description="the Hub's catalog database (needs `components.hub`); none: upstream's 5Gi"
    )
    hub_registry_database: VolumeSize | None = Field(
        default=None,
        description="the database of the model registry in `hubRegistryTeam`'s namespace; none: upstream's 10Gi",
    )
