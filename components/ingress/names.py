"""Names of the platform's load balancer controller that other parts read (pure: no resources)."""

NAMESPACE = "kube-system"
#: The service account the chart creates; the IRSA trust policy names exactly this, and RoleBindings that let the
#: controller read a Secret (an ALB's OIDC client) name it as their subject.
SERVICE_ACCOUNT = "aws-load-balancer-controller"
