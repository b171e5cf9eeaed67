"""What a judge may send and reach: approved key variables, allowed endpoints, short error text.

The runner sends the value of a judge's key variable as a Bearer token to the judge's URL and
shows the server's error text on the run page. Unchecked, an organizer could name HOME,
SECRET_KEY or DATABASE_URL and point the judge at their own listener, or make the server call
internal hosts (cloud metadata at 169.254.169.254) and read the answers. So:

- a judge may name only a variable the operator lists in JUDGE_API_KEY_ENVS, and a variable the
  operator binds to hosts in JUDGE_KEY_HOSTS (OPENAI_API_KEY to api.openai.com by default) is sent
  to those hosts only;
- a judge URL may point at a public address (unless JUDGE_ALLOW_PUBLIC_HOSTS is off) or at a host
  or network listed in JUDGE_ALLOWED_HOSTS; private, loopback, link-local, multicast, reserved
  and unspecified addresses are refused otherwise;
- error text kept from a judge server is cut short and has the key and auth headers blanked.

The model's validators apply these rules (so the form, the API and the admin refuse alike); the
pre-flight and the runner apply them again before connecting, and the runner's HTTP client checks
every address it resolves (a name that changes its address after the check is still refused)
and follows no redirects.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import re
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ERROR_LIMIT = 300
# A credential-bearing word and the value after it ("Authorization: Bearer abc" loses both words
# after the colon).
SENSITIVE = re.compile(
    r"(?i)\b(bearer|authorization|proxy-authorization|cookie|x-api-key|api[-_]?key)\b"
    r"(\"?\s*[:=]\s*\"?|\s+)(?:(?:bearer|basic|token)\s+)?[^\s\",;]+"
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Half of a UTF-16 pair: a JSON "\\ud800" decodes to one, and no database text can hold it.
SURROGATE = re.compile("[\ud800-\udfff]")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


# --- key variables --------------------------------------------------------------------------


def approved_key_envs() -> list[str]:
    return list(getattr(settings, "JUDGE_API_KEY_ENVS", ["OPENAI_API_KEY"]))


def validate_key_env(value: str) -> None:
    """The name of an approved environment variable (never the key, never any other variable)."""
    if not IDENTIFIER.match(value or ""):
        raise ValidationError(
            _("Give the name of an environment variable (letters, digits, _), not the key itself.")
        )
    if value.startswith("sk-") or len(value) > 64:
        raise ValidationError(_("This looks like a key; store the key in the environment."))
    if value not in approved_key_envs():
        raise ValidationError(
            _(
                "%(name)s is not an approved key variable. The server's operator approves them "
                "in JUDGE_API_KEY_ENVS; approved now: %(approved)s."
            )
            % {"name": value, "approved": ", ".join(approved_key_envs()) or "-"}
        )


def key_is_set(name: str) -> bool:
    """Whether this process has a value for the approved variable (the value is never shown)."""
    return name in approved_key_envs() and bool(os.environ.get(name))


def api_key(name: str) -> str:
    """The key to send, after checking the variable is approved and set."""
    validate_key_env(name)
    value = os.environ.get(name, "")
    if not value:
        raise ValidationError(
            _("The environment variable %(name)s (the judge's API key) is not set on the server.")
            % {"name": name}
        )
    return value


def key_hosts(name: str) -> set[str] | None:
    """The hosts the operator binds this key variable to (JUDGE_KEY_HOSTS), None when unbound."""
    hosts = {
        h.lower().rstrip(".") for var, h in getattr(settings, "JUDGE_KEY_HOSTS", []) if var == name
    }
    return hosts or None


def check_key_host(name: str, url: str) -> None:
    """Refuse sending a bound key variable to any host but its own: an organizer could otherwise
    point a judge at a server of theirs and receive the operator's key as the Bearer token."""
    hosts = key_hosts(name)
    if hosts is None:
        return
    try:
        parts = urlsplit(url or "")
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        parts, host = None, ""
    if host in hosts and parts is not None and parts.scheme != "https":
        # In clear text, anyone on the network path would read the operator's key.
        raise ValidationError(
            _("The key in %(name)s is only sent over https; the URL must start with https://.")
            % {"name": name}
        )
    if host not in hosts:
        raise ValidationError(
            _(
                "The key in %(name)s is only sent to %(hosts)s (the operator's JUDGE_KEY_HOSTS); "
                "choose another key variable for this URL."
            )
            % {"name": name, "hosts": ", ".join(sorted(hosts))}
        )


# --- endpoints ------------------------------------------------------------------------------


Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_PORT = re.compile(r"^(?P<host>.+):(?P<port>[0-9]{1,5})$")


def _split_port(entry: str) -> tuple[str, int | None]:
    """An entry of JUDGE_ALLOWED_HOSTS as (host, port or None for any port): `host:8000`,
    `10.0.0.0/8:8000`, `[::1]:8000`; an IPv6 address or network without brackets has no port."""
    if entry.startswith("["):
        host, _sep, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host, int(port) if port.isdigit() and port.isascii() else None
    m = _PORT.match(entry)
    if m and ":" not in m["host"]:
        return m["host"], int(m["port"])
    return entry, None


def _rules() -> tuple[
    list[tuple[str, int | None]], list[tuple[str, int | None]], list[tuple[Network, int | None]]
]:
    """(names, .suffixes, networks) the operator allows, each with its port (None: any)."""
    names: list[tuple[str, int | None]] = []
    suffixes: list[tuple[str, int | None]] = []
    networks: list[tuple[Network, int | None]] = []
    for raw in getattr(settings, "JUDGE_ALLOWED_HOSTS", []):
        entry, port = _split_port(raw.strip().lower())
        if not entry:
            continue
        try:
            networks.append((ipaddress.ip_network(entry, strict=False), port))
        except ValueError:
            if entry.startswith("."):
                suffixes.append((entry, port))
            else:
                names.append((entry.rstrip("."), port))
    return names, suffixes, networks


def _port_ok(allowed: int | None, port: int | None) -> bool:
    return allowed is None or allowed == port


def host_listed(host: str, port: int | None = None) -> bool:
    """The host name itself is listed (exactly, or under a listed .suffix), for this port."""
    names, suffixes, _networks = _rules()
    host = host.lower().rstrip(".")
    return any(host == n and _port_ok(p, port) for n, p in names) or any(
        host.endswith(s) and _port_ok(p, port) for s, p in suffixes
    )


def is_public(ip: Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_unspecified
    )


def address_refusal(ip: Address, port: int | None = None) -> str | None:
    """Why this address (on this port) may not be called, or None when it may."""
    _names, _suffixes, networks = _rules()
    if any(ip in net and _port_ok(p, port) for net, p in networks):
        return None
    if is_public(ip):
        if getattr(settings, "JUDGE_ALLOW_PUBLIC_HOSTS", True):
            return None
        return _("%(ip)s is not in JUDGE_ALLOWED_HOSTS") % {"ip": ip}
    return _(
        "%(ip)s is a private, loopback, link-local, multicast or reserved address; judges may "
        "call it only when the server's operator lists it in JUDGE_ALLOWED_HOSTS"
    ) % {"ip": ip}


def resolve(host: str, port: int) -> list[Address]:
    """Every address the host name resolves to ([] when it does not resolve)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    out = []
    for info in infos:
        try:
            out.append(ipaddress.ip_address(str(info[4][0]).split("%")[0]))
        except ValueError:
            continue
    return out


def check_base_url(url: str, *, must_resolve: bool = True) -> None:
    """Refuse a judge URL the operator has not allowed. A name that does not resolve is refused
    when must_resolve (the pre-flight and the runner, which are about to connect); the model
    accepts it, since the runner checks again before any key leaves."""
    try:
        parts = urlsplit(url or "")
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValidationError(_("Enter a valid URL with a valid port.")) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(
            _("The judge URL must start with http:// or https:// and name a host.")
        )
    if parts.username is not None or parts.password is not None:
        raise ValidationError(_("Put no user name or password in the judge URL."))
    host = parts.hostname
    if host_listed(host, port):
        return
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        addresses = resolve(host, port)
    if not addresses:
        if must_resolve:
            raise ValidationError(_("The judge host %(host)s does not resolve.") % {"host": host})
        return
    for ip in addresses:
        reason = address_refusal(ip, port)
        if reason:
            raise ValidationError(_("Judge URL refused: %(reason)s.") % {"reason": reason})


def validate_base_url(value: str) -> None:
    check_base_url(value, must_resolve=False)


def guarded_session():
    """An aiohttp session whose resolver refuses the addresses judges may not call, so a host
    name that changes its address after the checks (DNS rebinding) is still refused."""
    import aiohttp
    from aiohttp.abc import AbstractResolver
    from aiohttp.resolver import ThreadedResolver

    class GuardedResolver(AbstractResolver):
        def __init__(self) -> None:
            self._inner = ThreadedResolver()

        async def resolve(self, host: str, port: int = 0, family=socket.AF_INET):
            infos = await self._inner.resolve(host, port, family)
            if host_listed(host, port):
                return infos
            for info in infos:
                ip = ipaddress.ip_address(info["host"].split("%")[0])
                reason = address_refusal(ip, port)
                if reason:
                    raise OSError(errno.EACCES, f"{host}: {reason}")
            return infos

        async def close(self) -> None:
            await self._inner.close()

    connector = aiohttp.TCPConnector(limit=1000, resolver=GuardedResolver())
    return aiohttp.ClientSession(connector=connector)


# --- error text -----------------------------------------------------------------------------


def short_error(text: object, *, secrets: tuple[str, ...] = (), limit: int = ERROR_LIMIT) -> str:
    """Server or connection error text fit to store and show: the key and anything that looks
    like an auth header blanked, control characters (NUL included) removed, cut to `limit`."""
    text = str(text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    text = SENSITIVE.sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
    text = SURROGATE.sub("\ufffd", CONTROL.sub(" ", text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def storable_text(text: str) -> str:
    """A judge server's answer as the database can keep it: NUL characters (which PostgreSQL
    text refuses) dropped, a lone surrogate replaced by U+FFFD; anything else kept as sent."""
    return SURROGATE.sub("\ufffd", text.replace("\x00", ""))
