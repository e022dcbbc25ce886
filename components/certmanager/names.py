"""Names of the platform's cert-manager that other parts read (pure: no resources)."""

NAMESPACE = "cert-manager"
#: The API groups whose objects need the installation (its CRDs and its fail-closed webhooks serve them).
GROUPS = frozenset({"cert-manager.io", "acme.cert-manager.io"})
#: The kinds its CRDs define: (group, kind) -> (REST resource, namespaced), for code that must know their scope
#: without the CRDs at hand (they come with the chart).
KINDS = {
    ("cert-manager.io", "Certificate"): ("certificates", True),
    ("cert-manager.io", "CertificateRequest"): ("certificaterequests", True),
    ("cert-manager.io", "Issuer"): ("issuers", True),
    ("cert-manager.io", "ClusterIssuer"): ("clusterissuers", False),
    ("acme.cert-manager.io", "Order"): ("orders", True),
    ("acme.cert-manager.io", "Challenge"): ("challenges", True),
}
