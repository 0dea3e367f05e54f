"""Group descriptions of `mcpServers` servers the host gives none: what a server says about itself, as plain text.

`described(server, entry)` is the one rule, applied to a listing entry whether it came from the listing cache or
from the server's live `initialize` and `tools/list` (`mcp_servers.live_listing.remember` builds the same
entry), so the text is the same in the first run (no cached listing) and in every later one:

1. the server's `instructions`, else its `serverInfo.title`, else its `serverInfo.name` when that says more than
   the file's name (a name that only repeats the file's, or a package-like name such as `mcp-time` or
   `@acme/server-files`, says nothing more, and is not used);
2. made plain text (`plain_text`): markdown marks (headings, emphasis, code fences and backticks, links, list
   bullets, tables, HTML tags) removed, machine paths and home directories (`/home/alice/x`, `~/x`,
   `C:\\Users\\x`) replaced by `[path]`, whitespace collapsed;
3. cut to `MAX_DESCRIPTION_CHARS` (512) characters at a word boundary (`...` marks the cut);
4. a title or name reads `<title> (MCP server "<file name>")`; nothing usable: `default_description`.
"""

from __future__ import annotations

import re

from ..stores.listings import ServerListing

__all__ = ('MAX_DESCRIPTION_CHARS', 'default_description', 'described', 'plain_text')

MAX_DESCRIPTION_CHARS = 512
"""Most characters of a group description taken from what a server says about itself."""

_URL = re.compile(r'[A-Za-z][A-Za-z0-9+.-]*://\S+')
_FENCE = re.compile(r'^\s*(```|~~~).*$', re.MULTILINE)
_HEADING = re.compile(r'^\s{0,3}#{1,6}\s*', re.MULTILINE)
_BULLET = re.compile(r'^\s*(?:[-*+]|\d{1,3}[.)])\s+', re.MULTILINE)
_QUOTE = re.compile(r'^\s*>\s?', re.MULTILINE)
_RULE = re.compile(r'^\s*(?:[-*_]\s*){3,}$', re.MULTILINE)
_TABLE_RULE = re.compile(r'^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$', re.MULTILINE)
_IMAGE_OR_LINK = re.compile(r'!?\[([^\]]*)\]\([^)]*\)')
_HTML = re.compile(r'</?[A-Za-z][^>]*>')
_STRONG = re.compile(r'(\*\*|__)(?=\S)(.+?)(?<=\S)\1')
_EMPHASIS = re.compile(r'(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])')
_UNDERSCORED = re.compile(r'(?<![\w])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w])')
_TICKS = re.compile(r'`+')
_WINDOWS_PATH = re.compile(r'(?<![\w/])[A-Za-z]:[\\/][^\s"\'`<>|,;]*')
_POSIX_PATH = re.compile(
    r'(?<![\w:/.\\-])(?:~[\w.-]*)?/(?:[\w.@+-]+/)*[\w.@+-]*[\w@+-](?:/)?(?![\w])|(?<![\w])~(?=\s|$)'
)
_PACKAGE_LIKE = re.compile(r'@?[a-z0-9][a-z0-9._-]*(?:/[a-z0-9._-]+)?')


def plain_text(text: str) -> str:
    """`text` without markdown marks, machine paths or home directories, whitespace collapsed (see the module
    docstring); '' when nothing is left."""
    text = text.encode('utf-8', 'replace').decode('utf-8')  # a lone surrogate from JSON: '?'
    urls: list[str] = []

    def keep_url(match: re.Match[str]) -> str:
        urls.append(match.group(0).rstrip('.,;:)'))
        tail = match.group(0)[len(urls[-1]) :]
        return f'\x00{len(urls) - 1}\x00{tail}'

    text = _IMAGE_OR_LINK.sub(lambda m: m.group(1), text)
    text = _URL.sub(keep_url, text)
    text = _FENCE.sub(' ', text)
    text = _TABLE_RULE.sub(' ', text)
    text = _RULE.sub(' ', text)
    text = _HEADING.sub('', text)
    text = _QUOTE.sub('', text)
    text = _BULLET.sub('', text)
    text = _HTML.sub(' ', text)
    text = _STRONG.sub(lambda m: m.group(2), text)
    text = _EMPHASIS.sub(lambda m: m.group(1), text)
    text = _UNDERSCORED.sub(lambda m: m.group(1), text)
    text = _TICKS.sub('', text)
    text = _WINDOWS_PATH.sub('[path]', text)
    text = _POSIX_PATH.sub('[path]', text)
    text = text.replace('|', ' ')
    text = re.sub(r'\x00(\d+)\x00', lambda m: urls[int(m.group(1))], text)
    return ' '.join(text.split())


def _cut(text: str, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit - 3]
    space = head.rfind(' ')
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip(' ,;:') + '...'


def _says_more(name: str, server: str) -> bool:
    """Whether a `serverInfo.name` says more than the file's name `server`: not the same letters and digits, and
    not package-like (lower case, no space: `mcp-time`, `@acme/server-files`)."""

    def letters(text: str) -> str:
        return ''.join(c for c in text.lower() if c.isalnum())

    return letters(name) != letters(server) and not _PACKAGE_LIKE.fullmatch(name.strip())


def described(server: str, entry: ServerListing | None) -> str | None:
    """The description of the group of the MCP server named `server` in its file, from what it said (`entry`: its
    cached or live listing), by the module docstring's rule; None when it said nothing usable."""
    if entry is None:
        return None
    said = plain_text(entry.instructions or '')
    if said:
        return _cut(said)
    for title in (entry.server_title, entry.server_name):
        said = plain_text(title or '')
        if said and _says_more(said, server):
            return _cut(f'{_cut(said, 300)} (MCP server "{server[:150]}")')
    return None


def default_description(server: str) -> str:
    """The group description used when the host gives none and the server said nothing usable: `Tools of the MCP
    server "<name>"` (the name as written in the file, cut to 400 characters)."""
    return f'Tools of the MCP server "{server[:400]}"'
