"""Stack configuration of Karpenter: its log level, node classes and node pools (mappings keyed by name)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from components.config.types import ConfigModel, KeyName
from components.config.validation import FieldProblems
from components.karpenter.specs import DEFAULT_NODE_CLASSES, DEFAULT_NODE_POOLS, NodeClassSpec, NodePoolSpec


class KarpenterConfig(ConfigModel):
    """The Karpenter controller, its node classes and node pools (mappings keyed by name)."""

    log_level: Literal["debug", "info", "error"] = "info"
    node_classes: dict[KeyName, NodeClassSpec] = Field(
        default_factory=lambda: {k: NodeClassSpec.model_validate(v) for k, v in DEFAULT_NODE_CLASSES.items()}
    )
    node_pools: dict[KeyName, NodePoolSpec] = Field(
        default_factory=lambda: {k: NodePoolSpec.model_validate(v) for k, v in DEFAULT_NODE_POOLS.items()}
    )

    @model_validator(mode="after")
    def _check(self) -> KarpenterConfig:
        problems = [
            (f"nodePools.{name}.nodeClass", f"names no node class in karpenter.nodeClasses ({', '.join(sorted(self.node_classes))})")
            for name, pool in self.node_pools.items()
            if pool.node_class not in self.node_classes
        ]
        if problems:
            raise FieldProblems(problems)
        return self
