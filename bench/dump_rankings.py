"""Dump the core index's rankings, scores printed exactly, to compare two builds byte for byte.

    .venv/bin/python -m bench.dump_rankings --out /tmp/now.txt
    cmp /tmp/now.txt bench/dumps/after.txt                      # identical: no ranking moved
    diff <(cut -d' ' -f1-2 bench/dumps/after.txt) <(cut -d' ' -f1-2 /tmp/now.txt)   # order only, no scores

``bench/dumps/before.txt`` is the ranking before the core was split into ``src/index/`` (3f01d79);
``after.txt`` is main's ranking now: a change that moves rankings on purpose rewrites it in the same commit.

For every query of both benchmark corpora (BFCL, ``bench/lib/corpus.py``, and the agent-query development set,
``bench/lib/agent_corpus.py``) the first 10 results of ``_core.SearchIndex.search`` over all groups, with each
result's score from ``SearchIndex.explain`` printed as ``repr`` of the float (an f32 widened to a Python
float, so exact) and whether it was an exact-name match. The records and group descriptions are fed as
``bench/lib/rankers.py``'s ``ToolProxyRanker`` feeds them (the records ``grouping.directory`` builds), written out here. Then a few extra
queries over each corpus (exact names, canonical names, identifiers, browse, group filters, pages) and over a
small multilingual corpus written here (CJK, Khmer, Myanmar, Devanagari, Thai, Arabic, accented Latin).

One block per query::

    # <corpus> <query id> total=<n> [groups=...] [offset=...]
    > <query, escaped as a Python string literal>      (with --queries)
    1 <canonical name> <score repr> [exact]
    ...

``--hybrid`` dumps ``_core.SearchIndex.search_hybrid`` instead (``bench/dumps/hybrid.txt``): the same BFCL, agent and
multilingual records with deterministic vectors (no model: `HashEmbedder`, a sum of seeded pseudo-random unit vectors
of a text's lower-cased words from BLAKE2b, 64 dimensions, bit-stable on every platform), every query at weights
0.35 and 0.7, the extra queries (group filters, pages), and a BFCL corpus replicated to about 8,000 records, above the
prefilter's 3,072 vectors, so the prefilter-and-rerank path ranks too. One block per query and weight::

    # hybrid <corpus> <query id> w=<weight> total=<n> [groups=...] [offset=...]
    1 <canonical name> <fused repr> <keyword score repr> <keyword share repr> <cosine repr|None> <semantic share repr> [exact]

the scores from ``SearchIndex.explain_hybrid``.

``--compact`` writes one line per query: ``<corpus>\t<id>\t<total>[\t<query>]\t<name>:<score>[!],...`` (the same
information). The stored dumps (``bench/dumps/``) are written without ``--queries``.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.lib.corpus import Tool

K = 10

MULTILINGUAL_TOOLS: list[tuple[str, str, str, dict[str, Any]]] = [
    # (group, tool, description, parameters)
    (
        'zh',
        'search_weather',
        '查询城市的天气预报和气温',
        {'type': 'object', 'properties': {'city': {'type': 'string', 'description': '城市名称'}}},
    ),
    (
        'zh',
        'book_flight',
        '预订机票，选择航班和座位',
        {'type': 'object', 'properties': {'date': {'type': 'string', 'description': '出发日期'}}},
    ),
    (
        'ja',
        'translate_text',
        'テキストを日本語に翻訳します',
        {'type': 'object', 'properties': {'text': {'type': 'string', 'description': '翻訳する文章'}}},
    ),
    (
        'ko',
        'send_message',
        '친구에게 메시지를 보냅니다',
        {'type': 'object', 'properties': {'body': {'type': 'string', 'description': '메시지 내용'}}},
    ),
    (
        'km',
        'lookup_word',
        'ស្វែងរកពាក្យ ក៌ខ ក្នុងវចនានុក្រមខ្មែរ',
        {'type': 'object', 'properties': {'word': {'type': 'string', 'description': 'ពាក្យខ្មែរ'}}},
    ),
    (
        'my',
        'lookup_word',
        'မြန်မာ အဘိဓာန် တွင် စကားလုံး ရှာဖွေပါ',
        {'type': 'object', 'properties': {'word': {'type': 'string', 'description': 'မြန်မာစကားလုံး'}}},
    ),
    (
        'hi',
        'find_recipe',
        'हिन्दी में व्यंजन विधि खोजें',
        {'type': 'object', 'properties': {'dish': {'type': 'string', 'description': 'व्यंजन का नाम'}}},
    ),
    (
        'th',
        'check_train',
        'ตรวจสอบตารางรถไฟ ภาษาไทย',
        {'type': 'object', 'properties': {'station': {'type': 'string', 'description': 'สถานีรถไฟ'}}},
    ),
    (
        'ar',
        'convert_currency',
        'تحويل العملات بين الدول',
        {'type': 'object', 'properties': {'amount': {'type': 'number', 'description': 'المبلغ'}}},
    ),
    (
        'de',
        'strassen_suche',
        'Sucht Straßen und Wege in einer großen Stadt',
        {'type': 'object', 'properties': {'straße': {'type': 'string', 'description': 'Name der Straße'}}},
    ),
    (
        'fr',
        'reserver_hotel',
        'Réserver un hôtel à Paris, café compris, déjà payé',
        {'type': 'object', 'properties': {'nuit': {'type': 'integer', 'description': 'Nombre de nuits'}}},
    ),
    (
        'mix',
        'getHTTPResponseCode',
        'Return the HTTPResponse status code of a URL',
        {
            'type': 'object',
            'properties': {'url_path': {'type': 'string', 'description': 'The URL path', 'enum': ['a-b', 'c_d']}},
        },
    ),
    (
        'mix',
        'parse-kebab-case',
        'Parse kebab-case or snake_case identifiers (e.g. file_system)',
        {'type': 'object', 'properties': {'identifierName': {'type': 'string'}}},
    ),
]
MULTILINGUAL_GROUPS = {
    'zh': '中文工具',
    'ja': '日本語のツール',
    'ko': '한국어 도구',
    'km': 'ឧបករណ៍ខ្មែរ',
    'my': 'မြန်မာ ကိရိယာများ',
    'hi': 'हिन्दी उपकरण',
    'th': 'เครื่องมือภาษาไทย',
    'ar': 'أدوات عربية',
    'de': 'Deutsche Werkzeuge',
    'fr': 'Outils français',
    'mix': 'Identifier-heavy tools',
}
MULTILINGUAL_QUERIES = [
    '天气预报',
    '城市天气',
    '预订机票',
    '日本語 翻訳',
    '메시지 보내기',
    'ក៌ខ',
    'ពាក្យ',
    'វចនានុក្រមខ្មែរ',
    'စကားလုံး',
    'မြန်မာ အဘိဓာန်',
    'व्यंजन विधि',
    'हिन्दी',
    'รถไฟ',
    'ตารางรถไฟ',
    'العملات',
    'STRASSE',
    'straße suchen',
    'Straßen',
    'reserver hôtel',
    'RÉSERVER CAFÉ',
    'cafe\u0301',
    'http response code',
    'getHTTPResponseCode',
    'HTTPResponse',
    'mix__getHTTPResponseCode',
    'kebab case',
    'parse-kebab-case',
    'file system',
    'filesystem',
    'identifierName',
    'url_path',
    'km__lookup_word',
    'lookup_word',
    '',
    '   ',
    '?!',
    'x' * 200,
]


def _escape(text: str) -> str:
    return repr(text)[1:-1]


class Dump:
    def __init__(self, compact: bool, queries: bool) -> None:
        self.compact = compact
        self.queries = queries
        self.lines: list[str] = []

    def search(
        self,
        index: Any,
        corpus: str,
        qid: str,
        query: str,
        groups: list[str] | None = None,
        offset: int = 0,
        limit: int = K,
    ) -> None:
        total, keys = index.search(query, groups, offset, limit)
        rows = []
        for key in keys:
            explained = index.explain(query, groups, key)
            exact, score = (explained[0], explained[1]) if explained is not None else (False, float('nan'))
            rows.append((key, repr(float(score)), bool(exact)))
        extra = (f' groups={",".join(groups)}' if groups is not None else '') + (f' offset={offset}' if offset else '')
        if self.compact:
            cells = ','.join(f'{k}:{s}{"!" if e else ""}' for k, s, e in rows)
            shown = f'\t{_escape(query)}' if self.queries else ''
            self.lines.append(f'{corpus}\t{qid}{extra}\t{total}{shown}\t{cells}')
            return
        self.lines.append(f'# {corpus} {qid} total={total}{extra}')
        if self.queries:
            self.lines.append(f'> {_escape(query)}')
        for rank, (key, score, exact) in enumerate(rows, 1):
            self.lines.append(f'{rank} {key} {score}{" exact" if exact else ""}')


def build(tools: Sequence[Tool], group_descriptions: Mapping[str, str]) -> Any:
    """`_core.SearchIndex` over `tools`, as `bench/lib/rankers.py`'s `ToolProxyRanker` builds it (written out here,
    so that a dump does not change when that module does)."""
    from pydantic_ai_toolproxy import _core

    index = _core.SearchIndex()
    for group, description in group_descriptions.items():
        index.set_group_description(group, description)
    index.upsert([(f'{t.group}__{t.name}', t.group, t.name, t.description, t.parameters) for t in tools])
    return index


def extra_queries(dump: Dump, index: Any, corpus: str, tools: Sequence[Tool]) -> None:
    """Exact names, canonical names, identifiers, browse, a group filter and a second page over `tools`."""
    picks = [tools[i] for i in range(0, len(tools), max(1, len(tools) // 7))][:7]
    groups = sorted({tool.group for tool in tools})
    queries: list[tuple[str, str, list[str] | None, int]] = []
    for n, tool in enumerate(picks):
        queries += [
            (f'exact-tool-{n}', tool.name, None, 0),
            (f'exact-upper-{n}', f'  {tool.name.upper()} ', None, 0),
            (f'exact-canonical-{n}', f'{tool.group}__{tool.name}', None, 0),
            (f'identifier-{n}', tool.name.replace('_', ' '), None, 0),
            (f'in-group-{n}', tool.description[:80], [tool.group], 0),
            (f'page-2-{n}', tool.description[:80], None, K),
        ]
    queries += [
        ('browse-empty', '', None, 0),
        ('browse-punct', ' ?? ', None, 0),
        ('browse-groups', '', groups[:2], 0),
        ('browse-page', '', None, 25),
        ('no-groups', 'weather', [], 0),
        ('function-words', 'what is the of and to', None, 0),
        ('long-word', 'a' * 129 + ' weather', None, 0),
    ]
    for qid, query, selected, offset in queries:
        dump.search(index, f'{corpus}-extra', qid, query, selected, offset)


def run(compact: bool, queries: bool, only: Iterable[str]) -> list[str]:
    from bench.lib.sets import agent, bfcl

    dump = Dump(compact, queries)
    loaders = {'bfcl': bfcl, 'agent': agent}
    for corpus in only:
        tools, descriptions, questions = loaders[corpus]()
        index = build(tools, descriptions)
        for question in questions:
            dump.search(index, corpus, question.id, question.query)
        extra_queries(dump, index, corpus, tools)
    tools = [
        Tool(name, name, group, description, parameters) for group, name, description, parameters in MULTILINGUAL_TOOLS
    ]
    index = build(tools, MULTILINGUAL_GROUPS)
    for n, query in enumerate(MULTILINGUAL_QUERIES):
        dump.search(index, 'multilingual', f'q{n}', query)
    extra_queries(dump, index, 'multilingual', tools)
    return dump.lines


# --- --hybrid: the hybrid ranking over deterministic vectors -------------------------------------------------------

HYBRID_DIMENSIONS = 64
HYBRID_WEIGHTS = (0.35, 0.7)
HYBRID_LARGE_RECORDS = 8000
HYBRID_LARGE_QUERIES = 120


class HashEmbedder:
    """Deterministic text vectors without a model: each lower-cased word token (`\\w+`) gets a pseudo-random unit
    vector from BLAKE2b (so the same on every platform and Python), a text's vector is their sum, normalized, packed
    as little-endian float32. A text without words is the zero vector."""

    def __init__(self, dimensions: int = HYBRID_DIMENSIONS) -> None:
        self.dimensions = dimensions
        self._words: dict[str, list[float]] = {}

    def _word(self, word: str) -> list[float]:
        vector = self._words.get(word)
        if vector is None:
            raw = b''.join(
                hashlib.blake2b(word.encode('utf-8'), digest_size=64, salt=block.to_bytes(16, 'little')).digest()
                for block in range((self.dimensions * 4 + 63) // 64)
            )
            values = [int.from_bytes(raw[4 * i : 4 * i + 4], 'little') / 2**31 - 1.0 for i in range(self.dimensions)]
            norm = math.sqrt(math.fsum(v * v for v in values))
            vector = [v / norm for v in values]
            self._words[word] = vector
        return vector

    def values(self, text: str) -> list[float]:
        total = [0.0] * self.dimensions
        for word in re.findall(r'\w+', text.lower()):
            for i, value in enumerate(self._word(word)):
                total[i] += value
        norm = math.sqrt(math.fsum(v * v for v in total))
        return [v / norm for v in total] if norm > 0 else total

    def __call__(self, text: str) -> bytes:
        return struct.pack(f'<{self.dimensions}f', *self.values(text))


def tool_text(tool: Tool) -> str:
    """The text a tool's vector embeds: its group, name, description and parameter names."""
    properties = tool.parameters.get('properties') if isinstance(tool.parameters, dict) else None
    names = ' '.join(properties) if isinstance(properties, dict) else ''
    return f'{tool.group} {tool.name.replace("_", " ")} {tool.description} {names}'


class HybridDump:
    def __init__(self, embedder: HashEmbedder) -> None:
        self.embedder = embedder
        self.lines: list[str] = []

    def search(
        self,
        index: Any,
        corpus: str,
        qid: str,
        query: str,
        groups: list[str] | None = None,
        offset: int = 0,
        limit: int = K,
    ) -> None:
        vector = self.embedder(query)
        extra = (f' groups={",".join(groups)}' if groups is not None else '') + (f' offset={offset}' if offset else '')
        for weight in HYBRID_WEIGHTS:
            total, keys = index.search_hybrid(query, vector, groups, offset, limit, weight)
            self.lines.append(f'# hybrid {corpus} {qid} w={weight} total={total}{extra}')
            for rank, key in enumerate(keys, 1):
                explained = index.explain_hybrid(query, vector, groups, key, weight)
                if explained is None:
                    self.lines.append(f'{rank} {key} None')
                    continue
                exact, keyword, keyword_share, cosine, semantic_share, _, fused = explained
                cells = [repr(float(fused)), repr(float(keyword)), repr(float(keyword_share))]
                cells += [repr(float(cosine)) if cosine is not None else 'None', repr(float(semantic_share))]
                self.lines.append(f'{rank} {key} {" ".join(cells)}{" exact" if exact else ""}')


def build_hybrid(tools: Sequence[Tool], group_descriptions: Mapping[str, str], embedder: HashEmbedder) -> Any:
    """`build`, then one vector per tool (`tool_text` embedded by `embedder`), set in row batches."""
    index = build(tools, group_descriptions)
    keys = [f'{t.group}__{t.name}' for t in tools]
    rows = [embedder(tool_text(t)) for t in tools]
    for start in range(0, len(keys), 1000):
        index.set_vector_rows(keys[start : start + 1000], rows[start : start + 1000], embedder.dimensions)
    return index


def replicated(tools: Sequence[Tool], count: int) -> list[Tool]:
    """`count` records from `tools`, copy `n` of a tool renamed `<name>_c<n>` and its description given the word
    `variant<n>` (so copies differ in text and vector)."""
    out = list(tools)
    copy = 0
    while len(out) < count:
        copy += 1
        for tool in tools:
            if len(out) >= count:
                break
            out.append(
                Tool(
                    f'{tool.name}_c{copy}',
                    f'{tool.name}_c{copy}',
                    tool.group,
                    f'{tool.description} variant{copy}',
                    tool.parameters,
                )
            )
    return out


def run_hybrid(only: Iterable[str]) -> list[str]:
    from bench.lib.sets import agent, bfcl

    embedder = HashEmbedder()
    dump = HybridDump(embedder)
    loaders = {'bfcl': bfcl, 'agent': agent}
    for corpus in only:
        tools, descriptions, questions = loaders[corpus]()
        index = build_hybrid(tools, descriptions, embedder)
        for question in questions:
            dump.search(index, corpus, question.id, question.query)
        extra_queries(dump, index, corpus, tools)  # type: ignore[arg-type]
        if corpus == 'bfcl':
            large = replicated(tools, HYBRID_LARGE_RECORDS)
            index = build_hybrid(large, descriptions, embedder)
            step = max(1, len(questions) // HYBRID_LARGE_QUERIES)
            for question in questions[::step][:HYBRID_LARGE_QUERIES]:
                dump.search(index, 'bfcl-large', question.id, question.query)
            groups = sorted({tool.group for tool in tools})
            for n, question in enumerate(questions[::step][:8]):
                dump.search(index, 'bfcl-large', f'{question.id}-groups', question.query, groups[n::3])
                dump.search(index, 'bfcl-large', f'{question.id}-page-2', question.query, None, K)
    tools = [
        Tool(name, name, group, description, parameters) for group, name, description, parameters in MULTILINGUAL_TOOLS
    ]
    index = build_hybrid(tools, MULTILINGUAL_GROUPS, embedder)
    for n, query in enumerate(MULTILINGUAL_QUERIES):
        dump.search(index, 'multilingual', f'q{n}', query)
    extra_queries(dump, index, 'multilingual', tools)  # type: ignore[arg-type]
    return dump.lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', type=Path, required=True)
    parser.add_argument('--compact', action='store_true', help='one line per query')
    parser.add_argument('--queries', action='store_true', help='print each query too')
    parser.add_argument('--corpus', choices=['all', 'bfcl', 'agent'], default='all')
    parser.add_argument('--hybrid', action='store_true', help='dump search_hybrid over deterministic vectors')
    args = parser.parse_args()
    only = ['bfcl', 'agent'] if args.corpus == 'all' else [args.corpus]
    lines = run_hybrid(only) if args.hybrid else run(args.compact, args.queries, only)
    text = '\n'.join(lines) + '\n'
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding='utf-8')
    digest = hashlib.sha256(text.encode('utf-8')).hexdigest()
    print(f'{args.out}: {len(text.encode("utf-8")):,} bytes, sha256 {digest}')


if __name__ == '__main__':
    main()
