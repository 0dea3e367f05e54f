"""100,000 hostile call envelopes never reach beyond the current step's grouped members.

A generated corpus (seeded, so every run plays the same envelopes) is driven through real `Agent` runs with
a scripted `FunctionModel`: every model response carries a batch of `call_proxy_tool` envelopes (plus a few
direct calls of names the model must not call). Every tool that exists in the agent records each execution
with its run step. Members are hidden per step by a capability's `prepare_tools`, by `PrepareTools` and by a
source's own filter, so "the current step's grouped directory" changes every step; an independent oracle
computes it, and the hooks' real output is recorded and compared with it.

Asserted for every envelope: exactly the oracle's expected target ran (or nothing), every call got a
result (success, retry or failure) on its own call id, every retry or failure says what to do next, and no
run raised. Set `TOOLPROXY_ENVELOPES` to play a larger corpus (e.g. 1,000,000).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability, PrepareTools
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from support import returns_by_id

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup
from pydantic_ai_toolproxy._messages import MAX_MESSAGE_CHARS

CALL, SEARCH = 'call_proxy_tool', 'search_proxy_tools'
ENVELOPES = int(os.environ.get('TOOLPROXY_ENVELOPES', '100000'))
BATCH = 500  # calls per model response
STEPS_PER_RUN = 8  # model responses with calls per run; then the run ends with text

# group -> {local name: kind}; kind 'int' takes {"value": int}, 'none' takes no arguments.
GROUPS: dict[str, dict[str, str]] = {
    'crm': {'customer_name': 'int', 'update_customer_email': 'int', 'delete_customer': 'none', 'export_all': 'none'},
    'billing': {'list_invoices': 'int', 'refund_invoice': 'int', 'close_books': 'none'},
    'ops': {'restart': 'none', 'scale': 'int'},
    # `ops_` + `purge` has the canonical name `ops___purge`, which `ops` + `_purge` would also produce.
    'ops_': {'purge': 'none'},
}
MEMBERS = {(g, t) for g, tools in GROUPS.items() for t in tools}
# Ungrouped tools. `ops__audit` looks like a canonical member name but belongs to no group.
UNGROUPED = {'status': 'none', 'ops__audit': 'none'}
# A second proxy on the same agent: its members are outside the first proxy's directory.
OTHER_PROXY = {'vault': {'open_vault': 'none'}}
VALID_ARGS = {'int': {'value': 7}, 'none': {}}


def hidden_by_capability(step: int) -> set[str]:
    """Members a capability's `prepare_tools` hides in `step` (rotating, and all of billing every 5th step)."""
    names = sorted(f'{g}__{t}' for g, t in MEMBERS)
    hidden = {n for i, n in enumerate(names) if i % 4 == step % 4}
    if step % 5 == 0:
        hidden |= {n for n in names if n.startswith('billing__')}
    return hidden


def hidden_by_prepare_tools(step: int) -> set[str]:
    """Members `PrepareTools` hides in `step`."""
    return {'crm__export_all'} if step % 2 else {'ops__scale'}


def hidden_by_source(step: int) -> set[str]:
    """Local names the crm source's own filter hides in `step`."""
    return {'update_customer_email'} if step % 3 == 1 else set()


def visible(step: int) -> set[tuple[str, str]]:
    """The oracle: the (group, local name) members of the first proxy's directory in `step`."""
    hidden = hidden_by_capability(step) | hidden_by_prepare_tools(step)
    return {
        (g, t) for g, t in MEMBERS if f'{g}__{t}' not in hidden and not (g == 'crm' and t in hidden_by_source(step))
    }


@dataclass
class Recorder:
    """Every execution of every tool, and the member names each step's hooks let through."""

    executed: list[tuple[str, int, str]] = field(default_factory=list)
    prepared: dict[tuple[str, int], set[str]] = field(default_factory=dict)


def make_tool(recorder: Recorder, label: str, name: str, kind: str) -> Tool[Any]:
    """A tool named `name` that records `(run_id, run_step, label)` each time it actually runs."""
    if kind == 'int':

        async def with_value(ctx: RunContext[Any], value: int) -> str:
            recorder.executed.append((ctx.run_id, ctx.run_step, label))
            return f'{label}:{value}'

        return Tool(with_value, name=name, takes_ctx=True, description=f'{name} ({label})')

    async def without(ctx: RunContext[Any]) -> str:
        recorder.executed.append((ctx.run_id, ctx.run_step, label))
        return f'{label}:ok'

    return Tool(without, name=name, takes_ctx=True, description=f'{name} ({label})')


def toolset(recorder: Recorder, owner: str, tools: dict[str, str]) -> FunctionToolset[Any]:
    """Tools labelled `owner/name` (owner: a group, or `(ungrouped)`)."""
    return FunctionToolset([make_tool(recorder, f'{owner}/{n}', n, k) for n, k in tools.items()])


@dataclass
class HideByStep(AbstractCapability[Any]):
    """A capability whose `prepare_tools` hook hides members per step and records what it let through."""

    recorder: Recorder = field(default_factory=Recorder)

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        hidden = hidden_by_capability(ctx.run_step)
        kept = [t for t in tool_defs if t.name not in hidden]
        members = {f'{g}__{t}' for g, t in MEMBERS}
        self.recorder.prepared[(ctx.run_id, ctx.run_step)] = {t.name for t in kept if t.name in members}
        return kept


def build_agent(recorder: Recorder, model: FunctionModel) -> Agent[None, str]:
    crm = toolset(recorder, 'crm', GROUPS['crm']).filtered(
        lambda ctx, tool_def: tool_def.name not in hidden_by_source(ctx.run_step)
    )
    groups = {
        g: ToolProxyGroup(source=crm if g == 'crm' else toolset(recorder, g, tools), description=f'{g} operations')
        for g, tools in GROUPS.items()
    }
    proxy = ToolProxyCapability(groups=groups)
    other = ToolProxyCapability(
        groups={'vault': ToolProxyGroup(source=toolset(recorder, 'vault', OTHER_PROXY['vault']), description='Vault')},
        config=ToolProxyConfig(search_name='search_vault', call_name='call_vault'),
    )

    async def hide(ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        hidden = hidden_by_prepare_tools(ctx.run_step)
        return [t for t in tool_defs if t.name not in hidden]

    return Agent(
        model,
        toolsets=[toolset(recorder, '(ungrouped)', UNGROUPED)],
        # The hooks run innermost-first on the step's tools: both filters see (and hide) members.
        capabilities=[proxy, other, PrepareTools(hide), HideByStep(recorder)],
        retries=10_000,
    )


# --- the corpus -------------------------------------------------------------------------------------------

LOOKALIKES = {'a': 'а', 'c': 'с', 'e': 'е', 'o': 'о', 'p': 'р', 'i': 'і', 'l': 'ӏ', 's': 'ѕ', 'x': 'х', 'y': 'у'}
INVISIBLE = ['\u200b', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u0301']


def lookalike(rng: random.Random, name: str) -> str:
    """`name` with one character replaced by a Unicode look-alike, fullwidth form, or an invisible insertion."""
    choice = rng.randrange(4)
    if choice == 0:
        spots = [i for i, c in enumerate(name) if c in LOOKALIKES]
        if spots:
            i = rng.choice(spots)
            return name[:i] + LOOKALIKES[name[i]] + name[i + 1 :]
    if choice == 1:
        return ''.join(chr(ord(c) + 0xFEE0) if '!' <= c <= '~' else c for c in name)  # fullwidth
    if choice == 2:
        i = rng.randrange(len(name) + 1)
        return name[:i] + rng.choice(INVISIBLE) + name[i:]
    return name + rng.choice([' ', '\t', '\n', '\x00', '\ud800'])  # trailing whitespace, NUL, lone surrogate


def near_miss(rng: random.Random, name: str) -> str:
    """One random edit: delete, insert, substitute, transpose, or change case."""
    if not name:
        return 'x'
    i = rng.randrange(len(name))
    op = rng.randrange(6)
    letters = 'abcdefghijklmnopqrstuvwxyz_-.'
    if op == 0 and len(name) > 1:
        return name[:i] + name[i + 1 :]
    if op == 1:
        return name[:i] + rng.choice(letters) + name[i:]
    if op == 2:
        return name[:i] + rng.choice(letters.replace(name[i], '') or 'q') + name[i + 1 :]
    if op == 3 and i + 1 < len(name) and name[i] != name[i + 1]:
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    if op == 4:
        return name.upper() if name != name.upper() else name.lower() + 'x'
    return name.capitalize() if name != name.capitalize() else name + '_'


PATHS = [
    '../crm',
    'crm/customer_name',
    '/etc/passwd',
    'crm.customer_name',
    'crm::customer_name',
    'crm\\x',
    '~',
    '.',
    '..',
    'crm/../billing',
    'file:///crm',
    'crm%2Fcustomer_name',
    '*',
    'crm*',
    '%s',
    '{group}',
    '${tool}',
]
CONTROLS = [CALL, SEARCH, 'call_vault', 'search_vault']
HUGE = 'x' * 10_240
HUGE_UNICODE = '界' * 3_414  # 10 KB of UTF-8


def bad_name(rng: random.Random, real: list[str]) -> str:
    """A string that is not a real name of this kind: one of the hostile families."""
    family = rng.randrange(9)
    base = rng.choice(real)
    if family == 0:
        return near_miss(rng, base)
    if family == 1:
        return lookalike(rng, base)
    if family == 2:
        return rng.choice(PATHS)
    if family == 3:
        return rng.choice(['', ' ', HUGE, HUGE_UNICODE, '\x00', '__', '___'])
    if family == 4:
        return rng.choice(CONTROLS)
    if family == 5:
        return rng.choice([*UNGROUPED, 'open_vault', 'vault'])
    if family == 6:
        return base.upper()
    if family == 7:
        return ''.join(rng.choice('abcdefghijklmnopqrstuvwxyz_') for _ in range(rng.randint(1, 24)))
    return base + rng.choice(['__', '___', '__x', '/x', '.x'])


def bad_arguments(rng: random.Random, group: str, tool: str, kind: str) -> Any:
    """Arguments the target's own validator must reject (or that are not an object at all)."""
    choice = rng.randrange(10)
    nested = {'group': 'billing', 'tool': 'refund_invoice', 'arguments': {'value': 1}}
    if choice == 0:
        return {**VALID_ARGS[kind], **nested}  # a nested envelope as extra keys
    if choice == 1:
        return {'arguments': nested}
    if choice == 2:
        return {'value': 'seven'} if kind == 'int' else {'value': 7}
    if choice == 3:
        return {} if kind == 'int' else {'x': None}
    if choice == 4:
        return rng.choice([[1, 2], 5, True, 'not json', '[1]', '"str"', '{"value": '])
    if choice == 5:
        return json.dumps(nested)  # a JSON string holding an envelope for another tool
    if choice == 6:
        return {'value': 7, CALL: nested}
    if choice == 7:
        return {'value': HUGE} if kind == 'int' else {HUGE: 1}
    if choice == 8:
        return {'value': 7, 'tool_call_id': 'x', 'group': group, 'tool': tool}
    return {'value': {'group': group, 'tool': tool, 'arguments': {}}}


@dataclass(frozen=True)
class Planned:
    """One call of the corpus; `expect` is the member (group, tool) that must run, or None when nothing may."""

    name: str
    args: Any
    family: str
    expect: tuple[str, str] | None


def legitimate(name: str, args: Any) -> tuple[str, str] | None:
    """The oracle of a legitimate call: this proxy's call control, exactly the keys group/tool/arguments, a real
    member, and that member's valid arguments (as an object or a JSON string). Visibility is checked per step."""
    if name != CALL or not isinstance(args, dict) or set(args) != {'group', 'tool', 'arguments'}:
        return None
    pair = (args['group'], args['tool'])
    if not all(isinstance(x, str) for x in pair) or pair not in MEMBERS:
        return None
    valid = VALID_ARGS[GROUPS[pair[0]][pair[1]]]
    arguments = args['arguments']
    if arguments == valid or (isinstance(arguments, str) and arguments == json.dumps(valid)):
        return pair
    return None


def plan_envelope(rng: random.Random) -> Planned:
    """One hostile (or, sometimes, legitimate) call."""
    groups = sorted(GROUPS)
    members = sorted(MEMBERS)
    family = rng.choices(
        ['exact', 'exact_bad_args', 'bad_group', 'bad_tool', 'canonical', 'types', 'shape', 'direct', 'cross'],
        weights=[14, 14, 16, 20, 10, 6, 8, 6, 6],
    )[0]
    group, tool = rng.choice(members)
    kind = GROUPS[group][tool]
    name, args = CALL, None
    if family == 'exact':
        arguments: Any = dict(VALID_ARGS[kind])
        if rng.random() < 0.2:
            arguments = json.dumps(arguments)  # the same arguments as a JSON string
        args = {'group': group, 'tool': tool, 'arguments': arguments}
    elif family == 'exact_bad_args':
        args = {'group': group, 'tool': tool, 'arguments': bad_arguments(rng, group, tool, kind)}
    elif family == 'bad_group':
        args = {'group': bad_name(rng, groups), 'tool': tool, 'arguments': VALID_ARGS[kind]}
    elif family == 'bad_tool':
        args = {'group': group, 'tool': bad_name(rng, sorted(GROUPS[group])), 'arguments': VALID_ARGS[kind]}
    elif family == 'canonical':
        envelope = rng.choice(
            [
                {'group': group, 'tool': f'{group}__{tool}'},
                {'group': group, 'tool': 'x__y'},
                {'group': f'{group}__{tool}', 'tool': tool},
                {'group': 'ops', 'tool': '_purge'},  # would be `ops___purge`, the canonical name of ops_/purge
                {'group': 'ops', 'tool': 'audit'},  # `ops__audit` is an ungrouped tool, not a member
                {'group': 'vault', 'tool': 'open_vault'},  # the other proxy's member
                {'group': rng.choice(groups), 'tool': rng.choice([t for g, t in members if g != group])},
            ]
        )
        pair = (envelope['group'], envelope['tool'])
        args = {**envelope, 'arguments': VALID_ARGS[GROUPS[pair[0]][pair[1]]] if pair in MEMBERS else {}}
    elif family == 'types':
        odd = rng.choice([None, 1, 1.5, True, [], ['crm'], {}, {'group': 'crm'}])
        args = {'group': group, 'tool': tool, 'arguments': VALID_ARGS[kind]}
        args[rng.choice(['group', 'tool'])] = odd
    elif family == 'shape':
        args = rng.choice(
            [
                {'tool': tool, 'arguments': VALID_ARGS[kind]},
                {'group': group, 'arguments': VALID_ARGS[kind]},
                {},
                {'group': group, 'tool': tool, 'arguments': VALID_ARGS[kind], 'extra': 1},
                {'envelope': {'group': group, 'tool': tool, 'arguments': VALID_ARGS[kind]}},
                '{"group": ',
                json.dumps([group, tool]),
                {
                    'group': group,
                    'tool': tool,
                    'arguments': {'group': group, 'tool': tool, 'arguments': VALID_ARGS[kind]},
                },
            ]
        )
    elif family == 'direct':
        name = rng.choice(
            [f'{group}__{tool}', 'ops___purge', 'vault__open_vault', near_miss(rng, f'{group}__{tool}'), 'ops__audit_']
        )
        args = VALID_ARGS[kind]
    elif rng.random() < 0.5:  # 'cross': the other proxy's control with this proxy's envelope, and vice versa
        name, args = 'call_vault', {'group': group, 'tool': tool, 'arguments': VALID_ARGS[kind]}
    else:
        args = {'group': 'vault', 'tool': 'open_vault', 'arguments': {}}
    return Planned(name, args, family, legitimate(name, args))


NEXT_STEP = (
    'Expected envelope:',  # the envelope's own validation, unknown group, bad arguments shape
    'Use `search_proxy_tools`',  # unknown tool in a known group
    'Fix `arguments`',  # the target's validation errors
    'Call `',  # a member called directly: "Call `call_proxy_tool` with {...} instead."
    'Find grouped tools with `search_vault`',  # an unknown direct tool name (rewritten by `controls.unknown`; this test's control names)
)


def wire_args(args: Any) -> Any:
    """Arguments as a provider would deliver them: a lone surrogate can only arrive escaped inside JSON text."""
    if isinstance(args, dict):
        try:
            json.dumps(args, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            return json.dumps(args)
    return args


@dataclass
class Driver:
    """The scripted model: plays `BATCH` planned calls per response and remembers them by call id."""

    rng: random.Random
    remaining: int
    planned: dict[str, tuple[int, Planned]] = field(default_factory=dict)
    steps: int = 0
    calls: int = 0
    received: list[ModelMessage] = field(default_factory=list)
    """The messages of the latest request, as the model received them (unknown-tool retries rewritten there,
    while the run's own history keeps Pydantic AI's text)."""

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.received = list(messages)
        responses = sum(isinstance(m, ModelResponse) for m in messages)
        step = responses + 1
        if responses >= STEPS_PER_RUN or self.remaining <= 0:
            return ModelResponse(parts=[TextPart('done')])
        count = min(BATCH, self.remaining)
        self.remaining -= count
        self.steps += 1
        parts = []
        for _ in range(count):
            planned = plan_envelope(self.rng)
            self.calls += 1
            call_id = f'c{self.calls}'
            self.planned[call_id] = (step, planned)
            parts.append(ToolCallPart(planned.name, wire_args(planned.args), tool_call_id=call_id))
        return ModelResponse(parts=parts)


@pytest.mark.slow
async def test_100k_hostile_envelopes_never_reach_beyond_the_current_step() -> None:
    recorder = Recorder()
    driver = Driver(random.Random(20261129), ENVELOPES)
    agent = build_agent(recorder, FunctionModel(driver))
    families: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    started = time.perf_counter()
    runs = 0
    while driver.remaining > 0:
        before = len(recorder.executed)
        planned_before = set(driver.planned)
        result = await agent.run('hostile corpus')  # raises on any unhandled exception
        runs += 1
        assert result.output == 'done'
        run_id = result.run_id
        new_calls = {k: v for k, v in driver.planned.items() if k not in planned_before}
        parts = returns_by_id(driver.received)  # the run's last request: every result, as the model read it
        executed = recorder.executed[before:]
        # Every execution happened in this run, at a step whose directory (per the hooks) held that member.
        for exec_run, exec_step, label in executed:
            assert exec_run == run_id
            group, _, local = label.partition('/')
            assert (group, local) in visible(exec_step), f'{label} ran at step {exec_step} outside its directory'
            assert f'{group}__{local}' in recorder.prepared[(run_id, exec_step)]
        for (rid, step), names in recorder.prepared.items():
            if rid == run_id:
                assert names == {f'{g}__{t}' for g, t in visible(step)}, f'oracle differs from the hooks at step {step}'
        # Per envelope, in emission order: exactly the expected target ran, or nothing.
        expected: list[str] = []
        for call_id, (step, planned) in new_calls.items():
            families[planned.family] += 1
            part = parts.get(call_id)
            assert part is not None, f'call {call_id} ({planned.family}) got no result'
            outcomes[part.outcome] += 1
            if planned.expect is not None and planned.expect in visible(step):
                assert part.outcome == 'success', (planned, part.model_response_str())
                group, tool = planned.expect
                expected.append(f'{group}/{tool}')
                assert part.content == f'{group}/{tool}:' + ('7' if GROUPS[group][tool] == 'int' else 'ok')
            else:
                assert part.outcome in ('retried', 'failed'), (planned, part.outcome, part.model_response_str())
                text = part.model_response_str()
                assert any(marker in text for marker in NEXT_STEP), (planned, text[:500])
                assert len(text.encode()) <= 4 * MAX_MESSAGE_CHARS, (planned, len(text))
        assert [label for _, _, label in executed] == expected
    elapsed = time.perf_counter() - started
    total = sum(families.values())
    assert total == ENVELOPES
    print(
        f'\n{total} calls in {runs} runs, {driver.steps} model responses, {elapsed:.1f} s; '
        f'families {dict(families)}; outcomes {dict(outcomes)}; executed {len(recorder.executed)}'
    )
    # The corpus exercises every family, and both refusals and legitimate executions.
    assert set(families) == {
        'exact',
        'exact_bad_args',
        'bad_group',
        'bad_tool',
        'canonical',
        'types',
        'shape',
        'direct',
        'cross',
    }
    assert outcomes['success'] > 0 and outcomes['retried'] > 0


@pytest.mark.parametrize(
    'envelope',
    [
        {'group': 'ops', 'tool': '_purge', 'arguments': {}},
        {'group': 'ops', 'tool': 'audit', 'arguments': {}},
        {'group': 'crm', 'tool': 'crm__customer_name', 'arguments': {'value': 7}},
        {'group': 'vault', 'tool': 'open_vault', 'arguments': {}},
        {'group': 'crm', 'tool': HUGE, 'arguments': {}},
    ],
    ids=['canonical-collision', 'ungrouped-lookalike', 'canonical-as-tool', 'other-proxy', '10KB-tool'],
)
async def test_named_hostile_envelopes_run_nothing_and_stay_short(envelope: dict[str, Any]) -> None:
    recorder = Recorder()
    turns = iter([[ToolCallPart(CALL, envelope, tool_call_id='c1')]])

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(turns, [TextPart('done')]))

    result = await build_agent(recorder, FunctionModel(model)).run('x')
    (part,) = [
        p
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    assert part.outcome == 'retried'
    assert recorder.executed == []
    text = part.model_response_str()
    assert len(text) < 1_000, len(text)  # a 10 KB name is not echoed back in full
    assert 'search_proxy_tools' in text or 'Current groups' in text
