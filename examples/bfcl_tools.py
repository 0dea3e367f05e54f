"""Real tool collections from the Berkeley Function Calling Leaderboard (BFCL).

Reads only the JSON data files shipped inside the installed ``bfcl-eval`` package
(``bfcl_eval/data/BFCL_v4_*.json`` and ``possible_answer/``); no ``bfcl_eval``
Python module is imported. Public API:

* :func:`load_bfcl_functions` - every unique BFCL function as a provider-safe tool
  name, description, JSON Schema and topic group (``domain``);
* :func:`load_bfcl_questions` - single-call BFCL questions with the expected tool
  and ground-truth arguments;
* :func:`bfcl_toolsets` - one Pydantic AI ``FunctionToolset`` per group whose tools
  deterministically echo their arguments;
* :data:`GROUP_DESCRIPTIONS` - group name -> description;
* :func:`convert_parameters`, :func:`unique_tool_name`, :func:`topic_group` - the steps
  that turn one BFCL definition into a tool (its JSON Schema, its provider-safe name,
  its group), shared with the search-quality corpus of ``bench/lib/corpus.py``.

Run ``python examples/bfcl_tools.py`` for a summary.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset

__all__ = [
    'GROUP_DESCRIPTIONS',
    'BfclFunction',
    'BfclQuestion',
    'bfcl_data_dir',
    'bfcl_name_map',
    'bfcl_toolsets',
    'convert_parameters',
    'load_bfcl_functions',
    'load_bfcl_questions',
    'topic_group',
    'unique_tool_name',
]

# Categories whose questions carry a `function` list; multi-turn/memory/web-search ones don't.
_SINGLE_CALL_SKIP_PREFIXES = ('multi_turn', 'memory', 'web_search', 'format_sensitivity')

# BFCL / Java / JavaScript type names -> JSON Schema types; `None` means "no type constraint".
_TYPE_MAP: dict[str, str | None] = {
    **dict.fromkeys(['dict', 'object', 'HashMap', 'Hashtable'], 'object'),
    **dict.fromkeys(['float', 'double', 'number'], 'number'),
    **dict.fromkeys(['integer', 'int', 'long', 'short', 'byte', 'Bigint'], 'integer'),
    **dict.fromkeys(['string', 'String', 'str', 'char'], 'string'),
    **dict.fromkeys(['boolean', 'bool', 'Boolean'], 'boolean'),
    **dict.fromkeys(['array', 'list', 'tuple', 'Array', 'ArrayList', 'Queue', 'Stack', 'Set'], 'array'),
    **dict.fromkeys(['any', 'Any', ''], None),
}
_SCHEMA_KEYS = ('description', 'enum', 'default', 'format', 'minimum', 'maximum', 'minItems', 'maxItems')

# Topic groups: (name, description, keywords). Keywords match whole words (an optional plural
# "s"/"es" allowed); a trailing "*" matches any word continuation ("geometr*" -> "geometric").
# `java` and `javascript` are assigned by source category, `misc` is the fallback.
_TOPICS: list[tuple[str, str, str]] = [
    (
        'math',
        'Mathematics and statistics: arithmetic, algebra, geometry, calculus, number theory, '
        'probability, statistics and data analysis calculations.',
        'math* algebra* geometr* calculus integral* derivative* prime factorial fibonacci gcd lcm '
        'quadratic equation* triangle* circle* rectangle* square polygon* area perimeter volume '
        'matrix matrices vector probabilit* statistic* regression mean median average variance '
        'deviation permutation* combination* sequence progression sum root logarithm* sqrt hypot '
        'polynomial* calculator arithmetic* percentage correlation distribution binomial dice',
    ),
    (
        'science',
        'Natural sciences: physics, chemistry, biology, genetics, astronomy, ecology and engineering formulas.',
        'physic* chemi* biolog* astronom* genetic* gene dna kinematic* velocity acceleration force '
        'electric* magnetic* wave energy mass density molecul* cell protein* evolution* planet* '
        'galax* species ecolog* atom* quantum thermodynamic* gravit* frequency resistance circuit* '
        'science* scientific particle* photon* orbit* fossil* enzyme* bacteria virus',
    ),
    (
        'finance',
        'Finance and economics: stocks, investments, loans, interest, taxes, currencies, '
        'banking, payments and economic indicators.',
        'financ* stock* invest* portfolio* loan* mortgage* interest tax tax* currenc* exchange bank '
        'banking payment* salary budget* crypto* bitcoin dividend* revenue* profit* gdp econom* '
        'inflation market* trading fund* accounting balance money credit debt asset* equity npv roi '
        'cagr depreciation insurance transaction* invoice* wallet*',
    ),
    (
        'travel',
        'Travel and transport: flights, hotels, car rentals, rides, trains, buses, routes, maps and trip planning.',
        'flight* hotel* travel* trip* ride* uber taxi rental* rentalcars car bus buses train airport* '
        'airline* route* direction* navigat* map vacation* tourist* attraction* visa itinerar* '
        'lodging booking commute traffic transit parking distance journey',
    ),
    (
        'weather_geo',
        'Weather, climate, environment and geography: forecasts, air quality, '
        'locations, cities, countries, populations and time zones.',
        'weather forecast* temperature* climate* humidity rain rainfall snow environment* pollution '
        'carbon emission* earthquake* geo geograph* geocod* location* coordinat* latitude longitude '
        'population* city cities countr* timezone sunrise sunset ocean* forest* tree wildlife animal* '
        'plant park mountain* river* disaster* solar renewable',
    ),
    (
        'food',
        'Food and drink: restaurants, recipes, groceries, nutrition, menus and food orders.',
        'restaurant* recipe* food* cuisine* grocer* meal* diet* nutrition* nutrient* calorie* drink* '
        'coffee wine beer vegan vegetarian menu cook* ingredient* bakery chef pizza burger* dish '
        'dinner lunch breakfast',
    ),
    (
        'sports_games',
        'Sports and games: teams, players, leagues, matches, scores, rankings, '
        'board games, card games and video games.',
        'sport* team player* league* match score* basketball football soccer tennis golf cricket '
        'baseball hockey nba nfl fifa olympic* athlet* tournament* championship* game* gaming chess '
        'poker card board esport* ranking* standings fixture*',
    ),
    (
        'media_arts',
        'Entertainment, media and the arts: movies, music, concerts, books, TV, events, art, sculpture and museums.',
        'movie* film* music* song* album* artist* concert* band playlist* spotify tv show series '
        'episode* theater* theatre* ticket* event* festival* book novel* author* poet* poem* '
        'literature art artwork* painting* paint sculpture* museum* gallery photo* image* video* '
        'podcast* media entertain* instrument* chord* melod* piano guitar dance comic* celebrit* '
        'actor* news',
    ),
    (
        'history_culture',
        'History, culture and society: historical events and figures, religion, '
        'politics, elections, languages and education.',
        'histor* president* war empire* religio* ancient monarch* king queen dynast* archaeolog* '
        'civiliz* cultur* language* translat* educat* school* universit* student* course* '
        'vocabulary elect* vote* politic* government* senat* congress parliament european century '
        'philosoph* mytholog* census demograph*',
    ),
    (
        'health',
        'Health and wellbeing: medical information, doctors and therapists, symptoms, '
        'medication, fitness, workouts and nutrition goals.',
        'health* medic* doctor* therap* hospital* disease* symptom* drug pharma* fitness workout* '
        'exercise* bmi sleep mental patient* dental dentist* vaccin* covid clinic* diagnos* blood '
        'heart psycholog* wellness yoga hydration allerg* body',
    ),
    (
        'legal',
        'Law, crime and public safety: lawsuits, court cases, laws, lawyers, patents, '
        'contracts, crimes and police records.',
        'law lawsuit* legal* court* case crime* criminal* lawyer* attorney* patent* contract* police '
        'judge* verdict* litigation* regulation* compliance copyright* trademark* offense* offence* '
        'felon* statute* ruling* prison*',
    ),
    (
        'shopping_home',
        'Shopping, real estate and home: products, stores, orders, prices, '
        'deliveries, properties, smart-home devices and appliances.',
        'product* store shop* order price* pricing buy* purchase* cart deliver* inventor* sale '
        'discount* amazon ecommerce retail* catalog* house* home property properties realestate '
        'apartment* rent furniture appliance* device* thermostat* lamp light washer dryer '
        'airconditioner smart vehicle* fuel battery charger repair* plumb* cleaning',
    ),
    (
        'productivity',
        'Productivity and communication: email, messages, calendars, schedules, '
        'reminders, to-do lists, notes, contacts, jobs and web search.',
        'email* mail message* messaging send sms chat calendar* schedule* meeting* appointment* '
        'reminder* alarm* todo task* note* contact* job* career* resume interview* hire hiring '
        'employ* search web google bing wiki wikipedia translate timer clock',
    ),
    (
        'software_services',
        'Software and cloud services: APIs, servers, projects, users, '
        'configuration, dashboards, monitoring, files, databases and DevOps tools.',
        'api apis server* project user* usergroup* config* setting* dashboard* service* database* '
        'sql file* directory deploy* log logs logging repo* git github docker kubernetes cluster* '
        'release* version* token* auth* oidc host* agent* alert* metric* monitor* application* app '
        'apps mobile apdex synthetic endpoint* webhook* integration* permission* role* account* '
        'password* login session* cache queue pipeline* build* code script* command* system* '
        'network* ip dns url http json xml csv pdf upload* download* backup* credential* secret* '
        'certificate* license* vulnerabilit* scan* badge* bitbucket jira slack',
    ),
]

GROUP_DESCRIPTIONS: dict[str, str] = {
    **{name: description for name, description, _ in _TOPICS},
    'java': 'Java library and application methods (BFCL simple_java): argument values are Java '
    'expressions or literals given as strings or JSON values.',
    'javascript': 'JavaScript functions from web applications and libraries (BFCL '
    'simple_javascript): argument values are JavaScript expressions or literals.',
    'misc': 'Miscellaneous tools that fit no other group.',
}
"""Group name -> non-blank description (<= 512 chars), in a stable display order."""


def _keyword_pattern(words: str) -> re.Pattern[str]:
    alternatives = '|'.join(w[:-1] + r'\w*' if w.endswith('*') else w + '(?:e?s)?' for w in words.split())
    return re.compile(rf'\b(?:{alternatives})\b')


_TOPIC_PATTERNS = [(name, _keyword_pattern(words)) for name, _, words in _TOPICS]


@dataclass(frozen=True)
class BfclFunction:
    """One unique BFCL function definition, converted to a provider-safe tool."""

    name: str
    """Tool name matching ``^[A-Za-z0-9_-]{1,64}$`` (unique across the catalogue)."""
    original_name: str
    """Name as written in BFCL, e.g. ``math.factorial``."""
    description: str
    parameters: dict[str, Any]
    """A JSON Schema object (``{"type": "object", "properties": ..., "required": ...}``)."""
    domain: str
    """Group name, a key of :data:`GROUP_DESCRIPTIONS`."""
    category: str
    """BFCL test category (data file) the kept definition was first seen in."""


@dataclass(frozen=True)
class BfclQuestion:
    """A BFCL question whose ground truth is exactly one function call."""

    id: str
    category: str
    question: str
    """The user message(s) of the single turn, joined with newlines."""
    tool_name: str
    """Expected (mapped) tool name."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Ground-truth arguments: the first acceptable non-empty value for each argument."""
    system_prompt: str | None = None
    """System message(s) of the turn, if any (a few live questions have one)."""


def bfcl_data_dir() -> Path:
    """Return the ``data`` directory of the installed ``bfcl_eval`` package (without importing it)."""
    spec = importlib.util.find_spec('bfcl_eval')
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError('bfcl-eval is not installed (pip install --no-deps bfcl-eval)')
    return Path(next(iter(spec.submodule_search_locations))) / 'data'


def _category(path: Path) -> str:
    return path.stem.removeprefix('BFCL_v4_')


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines() if line.strip()]


def _question_files() -> list[Path]:
    return [
        p
        for p in sorted(bfcl_data_dir().glob('BFCL_v4_*.json'))
        if not _category(p).startswith(_SINGLE_CALL_SKIP_PREFIXES)
    ]


def _convert_schema(node: dict[str, Any]) -> dict[str, Any]:
    """Convert one BFCL parameter schema node into standard JSON Schema (recursively)."""
    out: dict[str, Any] = {}
    raw_type = node.get('type')
    json_type = _TYPE_MAP.get(raw_type) if isinstance(raw_type, str) else None
    if json_type:
        out['type'] = json_type
    for key in _SCHEMA_KEYS:
        if key in node:
            out[key] = node[key]
    if isinstance(node.get('properties'), dict):
        out['properties'] = {k: _convert_schema(v) for k, v in node['properties'].items()}
        required = [r for r in node.get('required') or [] if r in out['properties']]
        if required:
            out['required'] = required
    if isinstance(node.get('items'), dict):
        out['items'] = _convert_schema(node['items'])
    if raw_type == 'tuple' and 'items' not in out:
        out['items'] = {}
    return out


def convert_parameters(parameters: dict[str, Any], category: str) -> dict[str, Any]:
    """Convert a function's BFCL ``parameters`` into a JSON Schema object.

    For Java/JavaScript functions BFCL expects most arguments as source-code strings
    (e.g. a variable name for a ``HashMap``), while its ground truth mixes such strings
    with JSON values; non-string top-level parameters are therefore left untyped and
    their declared type is moved into the description.
    """
    schema = _convert_schema(parameters)
    schema['type'] = 'object'
    schema.setdefault('properties', {})
    if category in ('simple_java', 'simple_javascript'):
        language = 'Java' if category == 'simple_java' else 'JavaScript'
        for name, prop in schema['properties'].items():
            raw_type = (parameters.get('properties') or {}).get(name, {}).get('type')
            if prop.pop('type', 'string') != 'string':
                hint = f'{language} {raw_type} value, as JSON or as {language} source code in a string.'
                prop['description'] = f'{prop.get("description", "").rstrip()} ({hint})'.lstrip()
    return schema


def unique_tool_name(original: str, taken: set[str]) -> str:
    """A provider-safe tool name for BFCL's `original` (at most 64 of ``[A-Za-z0-9_-]``), not in `taken`."""
    base = re.sub(r'[^A-Za-z0-9_-]', '_', original)[:64] or 'tool'
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f'_{n}'
        name = base[: 64 - len(suffix)] + suffix
    return name


def _tokens(text: str) -> str:
    """Split identifiers into lower-case words: ``getWeather.v2`` -> ``get weather v 2``."""
    text = re.sub(r'([a-z0-9])([A-Z])', r'\1 \2', text)
    return ' '.join(re.split(r'[^A-Za-z0-9]+|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])', text)).lower()


def topic_group(category: str, original_name: str, description: str) -> str:
    """Pick a group: Java/JS by category, else the best keyword topic (name x3 + description)."""
    if category in ('simple_java', 'simple_javascript'):
        return category.removeprefix('simple_')
    name_words, desc_words = _tokens(original_name), description.lower()
    best, best_score = 'misc', 0
    for topic, pattern in _TOPIC_PATTERNS:
        score = 3 * len(pattern.findall(name_words)) + len(pattern.findall(desc_words))
        if score > best_score:
            best, best_score = topic, score
    return best


@functools.cache
def _load_functions() -> tuple[BfclFunction, ...]:
    seen: dict[str, BfclFunction] = {}
    taken: set[str] = set()
    for path in _question_files():
        category = _category(path)
        for row in _read_jsonl(path):
            for fn in row.get('function') or []:
                original = fn['name']
                if original in seen:
                    continue
                description = (fn.get('description') or '').strip() or original
                params = convert_parameters(fn.get('parameters') or {}, category)
                tool_name = unique_tool_name(original, taken)
                taken.add(tool_name)
                seen[original] = BfclFunction(
                    name=tool_name,
                    original_name=original,
                    description=description,
                    parameters=params,
                    domain=topic_group(category, original, description),
                    category=category,
                )
    return tuple(seen.values())


def load_bfcl_functions() -> list[BfclFunction]:
    """Return every unique BFCL function definition (deduplicated by original name).

    Files are read in sorted order and lines in file order; the first definition of a
    name wins (later, differing definitions of the same name are ignored). The result
    is cached: treat the returned objects (including ``parameters``) as read-only.
    """
    return list(_load_functions())


def bfcl_name_map() -> dict[str, str]:
    """Return the mapping original BFCL name -> provider-safe tool name."""
    return {f.original_name: f.name for f in _load_functions()}


_OMITTED = object()


def _pick(acceptable: Any) -> Any:
    """Pick the first acceptable value that is not ``""``/``None`` (BFCL's "may be omitted")."""
    if not isinstance(acceptable, list):
        return _resolve(acceptable)
    for value in acceptable:
        if value != '' and value is not None:
            return _resolve(value)
    return _OMITTED


def _resolve(value: Any) -> Any:
    """Resolve nested possible answers: dict values are themselves lists of acceptable values."""
    if isinstance(value, dict):
        picked = {k: _pick(v) for k, v in value.items()}
        return {k: v for k, v in picked.items() if v is not _OMITTED}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    'object': dict,
    'array': list,
    'string': str,
    'boolean': bool,
    'integer': int,
    'number': (int, float),
}


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """Check ``value`` against the subset of JSON Schema produced here (type/enum/required/nesting)."""
    json_type = schema.get('type')
    if json_type is not None:
        if isinstance(value, bool) and json_type != 'boolean':
            return False
        if not isinstance(value, _JSON_TYPES[json_type]):
            return False
    if 'enum' in schema and value not in schema['enum']:
        return False
    if isinstance(value, dict):
        props = schema.get('properties', {})
        if not set(schema.get('required', [])) <= set(value):
            return False
        return all(_fits(v, props[k]) for k, v in value.items() if k in props)
    if isinstance(value, list) and 'items' in schema:
        return all(_fits(v, schema['items']) for v in value)
    return True


def load_bfcl_questions(limit: int | None = None) -> list[BfclQuestion]:
    """Return BFCL questions whose ground truth is exactly one function call.

    Only single-turn categories with ground truth are used (``simple_*``, ``multiple``,
    ``live_simple``, ``live_multiple``; parallel categories contribute only questions
    with a single expected call, i.e. none). A question is skipped when its ground-truth
    arguments do not fit the kept (first-seen) definition of the function - unknown
    argument, missing required one, wrong type or value outside an enum - which mostly
    happens when BFCL reuses a name with another definition. Ordered by
    sorted file name then line order; ``limit`` truncates the result.
    """
    functions = {f.original_name: f for f in _load_functions()}
    answers_dir = bfcl_data_dir() / 'possible_answer'
    questions: list[BfclQuestion] = []
    for path in _question_files():
        answer_path = answers_dir / path.name
        if not answer_path.exists():
            continue
        rows = {row['id']: row for row in _read_jsonl(path)}
        for answer in _read_jsonl(answer_path):
            calls = answer['ground_truth']
            if len(calls) != 1 or not isinstance(calls[0], dict) or len(calls[0]) != 1:
                continue
            ((original, raw_args),) = calls[0].items()
            fn = functions.get(original)
            row = rows.get(answer['id'])
            if fn is None or row is None or len(row['question']) != 1:
                continue
            args = _resolve(raw_args)
            if set(args) - set(fn.parameters['properties']) or not _fits(args, fn.parameters):
                continue  # e.g. written against another definition of the same name
            turn = row['question'][0]
            system = '\n'.join(m['content'] for m in turn if m['role'] == 'system')
            questions.append(
                BfclQuestion(
                    id=answer['id'],
                    category=_category(path),
                    question='\n'.join(m['content'] for m in turn if m['role'] == 'user'),
                    tool_name=fn.name,
                    arguments=args,
                    system_prompt=system or None,
                )
            )
            if limit is not None and len(questions) >= limit:
                return questions
    return questions


def _echo_impl(tool_name: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    # Async on purpose: pydantic-ai runs sync tools via `run_in_executor(func, **kwargs)`, which
    # breaks on BFCL parameters named `func`.
    async def echo(**kwargs: Any) -> dict[str, Any]:
        return {'tool': tool_name, 'arguments': kwargs, 'status': 'ok'}

    echo.__name__ = tool_name
    return echo


def bfcl_toolsets() -> dict[str, tuple[FunctionToolset[Any], str]]:
    """Build one ``FunctionToolset`` per group: group name -> (toolset, description).

    Every tool uses its BFCL JSON Schema as parameters schema (``Tool.from_schema``;
    arguments are not validated against it) and returns
    ``{"tool": name, "arguments": {...}, "status": "ok"}``. Groups are in
    :data:`GROUP_DESCRIPTIONS` order; empty groups are omitted. A fresh set of
    toolsets is built on each call.
    """
    by_group: dict[str, list[Tool[Any]]] = {group: [] for group in GROUP_DESCRIPTIONS}
    for fn in _load_functions():
        tool = Tool.from_schema(
            function=_echo_impl(fn.name),
            name=fn.name,
            description=fn.description,
            json_schema=copy.deepcopy(fn.parameters),
            takes_ctx=False,
        )
        by_group[fn.domain].append(tool)
    return {
        group: (FunctionToolset(tools, id=f'bfcl_{group}'), GROUP_DESCRIPTIONS[group])
        for group, tools in by_group.items()
        if tools
    }


def _summary() -> None:
    start = time.perf_counter()
    functions = load_bfcl_functions()
    loaded = time.perf_counter()
    toolsets = bfcl_toolsets()
    built = time.perf_counter()
    questions = load_bfcl_questions()
    print(f'functions: {len(functions)} (load {loaded - start:.2f}s, toolsets {built - loaded:.2f}s)')
    renamed = sum(f.name != f.original_name for f in functions)
    print(f'renamed tools: {renamed}; questions: {len(questions)}; groups: {len(toolsets)}')
    for group, (toolset, _) in toolsets.items():
        print(f'  {group:<18} {len(toolset.tools):>4}')
    sample = next(f for f in functions if f.original_name == 'math.factorial')
    print(f'sample: {sample.original_name} -> {sample.name} [{sample.domain}]')
    print(json.dumps(sample.parameters, indent=2))


if __name__ == '__main__':
    _summary()
