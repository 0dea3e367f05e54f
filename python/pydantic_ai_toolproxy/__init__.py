"""Group huge Pydantic AI tool collections behind two control tools.

Public API (spec `toolproxy.en.md`): `ToolProxyCapability`, `ToolProxyGroup`, `ToolProxyConfig`, and for
a13n-harness hosts `ToolProxyPlan` / `ToolProxySelection` (applied with `plan.apply(definition)` or
`pydantic_ai_toolproxy.harness.build`).
"""

from .capability import ToolProxyCapability
from .config import ToolProxyConfig
from .group import ToolProxyGroup
from .plan import ToolProxyPlan, ToolProxySelection

__all__ = ('ToolProxyCapability', 'ToolProxyConfig', 'ToolProxyGroup', 'ToolProxyPlan', 'ToolProxySelection')
__version__ = '0.1.0'
