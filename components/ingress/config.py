"""Stack configuration of ingress: whether the AWS Load Balancer Controller runs."""

from __future__ import annotations

from pydantic import StrictBool

from components.config.types import ConfigModel


class IngressConfig(ConfigModel):
    load_balancer_controller: StrictBool = True
