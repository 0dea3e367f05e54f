"""Real tool sources used across the tests."""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset

CALLS: list[str] = []
"""Every grouped or ungrouped tool that actually ran, in order (reset per test by the autouse fixture)."""


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    CALLS.append('customer_name')
    return {42: 'Ada'}.get(customer_id, 'Unknown')


def update_customer_email(customer_id: int, email: str) -> str:
    """Change the email address stored for a customer."""
    CALLS.append('update_customer_email')
    if '@' not in email:
        raise ModelRetry('email must contain @')
    return f'{customer_id}:{email}'


def list_invoices(customer_id: int, status: str = 'open') -> list[dict[str, Any]]:
    """List invoices of a customer, filtered by status."""
    CALLS.append('list_invoices')
    return [{'id': 1, 'customer_id': customer_id, 'status': status}]


def refund_invoice(invoice_id: int) -> str:
    """Refund an invoice. Irreversible."""
    CALLS.append('refund_invoice')
    return f'refunded {invoice_id}'


def explode(reason: str) -> str:
    """Fail with an unexpected error (a broken backend)."""
    CALLS.append('explode')
    raise RuntimeError(f'backend down: {reason}')


def status(ctx: RunContext[Any]) -> list[str]:
    """Report which tools the current step's ToolManager holds (an ungrouped tool)."""
    CALLS.append('status')
    assert ctx.tool_manager is not None and ctx.tool_manager.tools is not None
    return sorted(ctx.tool_manager.tools)


def crm_toolset(**kwargs: Any) -> FunctionToolset[Any]:
    return FunctionToolset(
        [customer_name, update_customer_email, Tool(explode, metadata={'danger': True})],
        instructions='Use numeric customer IDs, not display names.',
        **kwargs,
    )


def billing_toolset(**kwargs: Any) -> FunctionToolset[Any]:
    return FunctionToolset([list_invoices, refund_invoice], **kwargs)
