"""Group huge Pydantic AI tool collections behind two control tools.

Public API (spec `toolproxy.en.md`): `ToolProxyCapability`, `ToolProxyGroup`, `ToolProxyConfig`.
"""

from .capability import ToolProxyCapability
from .config import ToolProxyConfig
from .group import ToolProxyGroup

__all__ = ('ToolProxyCapability', 'ToolProxyConfig', 'ToolProxyGroup')
__version__ = '0.1.0'
