"""Stack configuration of ingress: whether the AWS Load Balancer Controller runs, and the AWS add-ons it may use."""

from __future__ import annotations

from pydantic import Field, StrictBool, model_validator

from ..config.types import ConfigModel
from ..config.validation import FieldProblems


class IngressConfig(ConfigModel):
    load_balancer_controller: StrictBool = Field(
        default=True, description="install the AWS Load Balancer Controller (on the system nodes, with its IRSA role)"
    )
    waf: StrictBool = Field(
        default=False,
        description="let the controller attach the WAF web ACLs Ingresses name (`alb.ingress.kubernetes.io/wafv2-acl-"
        "arn`, `waf-acl-id`): turns on its WAF and WAFv2 add-ons and grants their IAM actions; off, it neither "
        "calls nor may call WAF",
    )
    shield: StrictBool = Field(
        default=False,
        description="let the controller turn on Shield Advanced protection of ALBs (`alb.ingress.kubernetes.io/"
        "shield-advanced-protection`): turns on its Shield add-on and grants its IAM actions",
    )

    @model_validator(mode="after")
    def _check(self) -> IngressConfig:
        if not self.load_balancer_controller:
            problems = [
                (key, "is only used by the load balancer controller; remove it or set loadBalancerController")
                for key, on in (("waf", self.waf), ("shield", self.shield))
                if on
            ]
            if problems:
                raise FieldProblems(problems)
        return self
