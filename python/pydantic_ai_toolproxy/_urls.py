"""Database URLs in settings: which strings name PostgreSQL, and how to show one without its secrets.

No package imports: `config` (a setting's check and repr) and `stores` (opening, warnings) both use it.
"""

from __future__ import annotations

import re

__all__ = ('POSTGRES_SCHEMES', 'is_postgres_url', 'looks_like_database_url', 'redacted')

POSTGRES_SCHEMES = ('postgresql://', 'postgres://')
"""The URL schemes that name a PostgreSQL database (libpq's connection URIs)."""

# A scheme has two characters at least: `C:/Users/...` is a Windows path (a drive letter), never a URL.
_DATABASE_LIKE = re.compile(r'^\s*[a-z][a-z0-9+.-]+:/', re.I)
_SCHEME = re.compile(r'^\s*[a-z][a-z0-9+.-]+:/*', re.I)
_SECRET_PARAMS = re.compile(r'(?i)\b(password|sslpassword|passfile|sslkey)(\s*=\s*)(\'[^\']*\'|[^&\s]*)')


def is_postgres_url(value: object) -> bool:
    """Whether `value` is a str naming a PostgreSQL database (`postgresql://...` or `postgres://...`)."""
    return isinstance(value, str) and value.strip().lower().startswith(POSTGRES_SCHEMES)


def looks_like_database_url(value: object) -> bool:
    """Whether `value` is a str shaped like a URL (`scheme:/...`, e.g. SQLAlchemy's `postgresql+psycopg://` or a
    typo such as `postgresql:/host`) that is not a PostgreSQL URL libpq reads: such a setting is refused, never
    taken as a file path (which would create folders named after the URL, password included). A Windows path with
    a drive letter (`C:/cache/x.sqlite3`) is a path: a one-letter scheme is a drive."""
    return isinstance(value, str) and bool(_DATABASE_LIKE.match(value)) and not is_postgres_url(value)


def redacted(value: str) -> str:
    """`value` with every password hidden: the userinfo after the first `:` up to the last `@` of the authority
    (so an unencoded `@` or `/` in a password is hidden too), and `password=` style parameters, each as `***`.

    ```python
    from pydantic_ai_toolproxy._urls import redacted

    assert redacted('postgresql://app:S3cr3t@db/agents') == 'postgresql://app:***@db/agents'
    assert redacted('postgresql://app:p@ss/w0rd@db/agents') == 'postgresql://app:***@db/agents'
    assert redacted('postgresql://db/agents?password=x&sslmode=require') == 'postgresql://db/agents?password=***&sslmode=require'
    assert redacted('host=db password=secret dbname=agents') == 'host=db password=*** dbname=agents'
    ```
    """
    text = _SECRET_PARAMS.sub(lambda m: f'{m.group(1)}{m.group(2)}***', value)
    start = _SCHEME.match(text)  # `scheme://`, and typos such as `scheme:/` or `scheme+driver://`
    if start is None:
        return text
    prefix, rest = text[: start.end()], text[start.end() :]
    at = rest.rfind('@')
    if at < 0:
        return text
    userinfo, tail = rest[:at], rest[at:]
    user, colon, _ = userinfo.partition(':')
    if not colon:
        slash = user.find('/')  # `user/x@host`: not a userinfo of a URL libpq reads; hide all of it
        return f'{prefix}***{tail}' if slash >= 0 else text
    return f'{prefix}{user}:***{tail}'
