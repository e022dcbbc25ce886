"""Stack configuration of ingress: whether the AWS Load Balancer Controller runs."""

from __future__ import annotations

from pydantic import Field, StrictBool

from components.config.types import ConfigModel


class IngressConfig(ConfigModel):
    load_balancer_controller: StrictBool = Field(
        default=True, description="install the AWS Load Balancer Controller (on the system nodes, with its IRSA role)"
    )
