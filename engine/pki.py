"""Certificates and keys for the cluster in a box: one CA, the API server's serving certificate, a client certificate
per component, and the service-account signing key. Everything is made fresh per cluster and lives in its folder."""

from __future__ import annotations

import base64
import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

#: Long enough for any test run, short enough that a leaked folder is worthless soon.
_VALIDITY = datetime.timedelta(days=2)


@dataclass(frozen=True)
class Credential:
    """A PEM certificate and key on disk, and their bytes for a kubeconfig."""

    cert: Path
    key: Path

    def kubeconfig_user(self) -> dict[str, str]:
        return {
            "client-certificate-data": base64.b64encode(self.cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(self.key.read_bytes()).decode(),
        }


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


class Pki:
    """The cluster's certificate authority, writing into `folder`."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._ca_key = _key()
        now = datetime.datetime.now(datetime.UTC)
        self._ca = (
            x509.CertificateBuilder()
            .subject_name(_name("eksml-engine-ca"))
            .issuer_name(_name("eksml-engine-ca"))
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca_cert = folder / "ca.crt"
        self.ca_key = folder / "ca.key"
        self.ca_cert.write_bytes(self._ca.public_bytes(serialization.Encoding.PEM))
        _write_key(self._ca_key, self.ca_key)
        # The service-account token signer: RSA, which every consumer of the tokens accepts.
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.service_account_key = folder / "sa.key"
        self.service_account_pub = folder / "sa.pub"
        _write_key(sa_key, self.service_account_key)
        self.service_account_pub.write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    @property
    def ca_data(self) -> str:
        return base64.b64encode(self.ca_cert.read_bytes()).decode()

    def issue(
        self,
        file_name: str,
        common_name: str,
        *,
        organization: str | None = None,
        server_names: tuple[str, ...] = (),
        server_ips: tuple[str, ...] = (),
    ) -> Credential:
        """A certificate signed by the CA: a client certificate, or a serving one when names or addresses are given."""
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        server = bool(server_names or server_ips)
        usage = x509.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organization))
            .issuer_name(self._ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            alternatives: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
            alternatives += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        cert = builder.sign(self._ca_key, hashes.SHA256())
        credential = Credential(self.folder / f"{file_name}.crt", self.folder / f"{file_name}.key")
        credential.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, credential.key)
        return credential
