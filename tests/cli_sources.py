"""Tool sources with known problems, for `toolproxy check` run as a subprocess by tests/test_cli.py.

    toolproxy -s tests/cli_sources.py:problem_groups -s tests/cli_sources.py:direct check

Every kind of problem appears once: in `records` an oversized entry (`huge`), a blank description
(`undocumented`) and two names a search cannot tell apart (`Lookup`, `lookup`); in `crm` a duplicate local
name; in `client` an external and a deferred-loading member; in `billing` a member whose canonical name
`billing__refund` is also a direct tool, and a direct tool named like the call control.
`clean_groups`, `warning_groups` and `status` are the counterparts without errors.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import CombinedToolset, ExternalToolset, FunctionToolset

HUGE_DESCRIPTION = 'Summarize a very long report. ' + 'Every section of the report is described here at length. ' * 700


def lookup(record_id: int) -> str:
    """Look up a record by its id."""
    return f'record {record_id}'


def Lookup(record_id: int) -> str:
    """Look up a record by its id (legacy API)."""
    return f'record {record_id}'


def undocumented(record_id: int) -> str:
    return f'record {record_id}'


def huge(report: str) -> str:
    return report[:10]


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    return 'Ada'


def legacy_customer_name(customer_id: int) -> str:
    """The old customer lookup."""
    return 'Ada'


def refund(invoice_id: int) -> str:
    """Refund an invoice."""
    return f'refunded {invoice_id}'


def billing__refund(invoice_id: int) -> str:
    """A direct tool that happens to use a canonical name."""
    return ''


def call_proxy_tool(x: int) -> int:
    """A direct tool named like the call control."""
    return x


def problem_groups() -> dict[str, tuple[Any, str]]:
    """Group name -> (toolset, description), each group with the problems listed in the module docstring."""
    records = FunctionToolset([lookup, Lookup, undocumented, Tool(huge, description=HUGE_DESCRIPTION)])
    crm = CombinedToolset(
        [
            FunctionToolset([customer_name], id='crm'),
            FunctionToolset([Tool(legacy_customer_name, name='customer_name')], id='legacy'),
        ]
    )
    client = CombinedToolset(
        [
            ExternalToolset(
                [
                    ToolDefinition(
                        name='client_op', description='Runs on the client.', parameters_json_schema={'type': 'object'}
                    )
                ]
            ),
            FunctionToolset([Tool(refund, name='deferred_refund', defer_loading=True)]),
        ]
    )
    billing = FunctionToolset([refund])
    return {
        'records': (records, 'Records lookup'),
        'crm': (crm, 'Customer records'),
        'client': (client, 'Client-side operations'),
        'billing': (billing, 'Invoices and refunds'),
    }


direct = FunctionToolset([billing__refund, call_proxy_tool])
"""The direct tools: one collides with a canonical name, one with a control name."""


def clean_groups() -> dict[str, tuple[Any, str]]:
    """A grouping without problems."""
    return {
        'crm': (FunctionToolset([customer_name]), 'Customer records'),
        'billing': (FunctionToolset([refund]), 'Invoices'),
    }


def warning_groups() -> dict[str, tuple[Any, str]]:
    """Only a warning: `Lookup` and `lookup` tie for a search of either name; nothing would fail."""
    return {'records': (FunctionToolset([lookup, Lookup]), 'Records lookup')}


def server_status() -> str:
    """Report whether the host's backend is up."""
    return 'up'


status = FunctionToolset([server_status])
"""A direct tool without problems."""
