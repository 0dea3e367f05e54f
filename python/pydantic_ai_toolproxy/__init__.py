"""Group huge Pydantic AI tool collections behind two control tools.

Public API: `ToolProxyCapability`, `ToolProxyGroup`, `ToolProxyConfig`, and for a13n-harness hosts
`ToolProxyPlan` / `ToolProxySelection` (applied with `plan.apply(definition)` or
`pydantic_ai_toolproxy.harness.build`). `__version__` is the installed distribution's version, which
maturin takes from Cargo.toml (the one place it is written).
"""

from importlib.metadata import version as _version

from .capability import ToolProxyCapability
from .config import ToolProxyConfig
from .explain import SearchExplanation, TermMatch
from .group import ToolProxyGroup
from .plan import ToolProxyPlan, ToolProxySelection

__all__ = (
    'SearchExplanation',
    'TermMatch',
    'ToolProxyCapability',
    'ToolProxyConfig',
    'ToolProxyGroup',
    'ToolProxyPlan',
    'ToolProxySelection',
)
__version__ = _version('pydantic-ai-toolproxy')
