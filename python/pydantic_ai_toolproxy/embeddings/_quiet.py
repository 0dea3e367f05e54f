"""Keeping the model libraries quiet in a host's output and logs: their progress bars, advisory log lines and Python
warnings show once per process at most, and not at all when stderr is not a terminal (a service's logs, a pipe).

The libraries are those a local embedding model runs on (`LIBRARIES`: sentence-transformers, transformers,
huggingface_hub, tokenizers, torch, safetensors); `LocalEmbeddingModel` itself keeps numpy's floating-point
warnings inside its forward pass. Two moments, each acted on once per process:

- `before_first_use`, when a surface first resolves its embedder (`hybrid.embedder.ResolvedEmbedder.embedder`) and when
  the CLI resolves `--embedder`: `QUIET_ENVIRONMENT` where the environment does not set those variables (read when
  the libraries are imported; a host that imported them before gets their switches set instead), their Python
  warnings shown once each (`once`) or, when stderr is not a terminal, ignored; when stderr is not a terminal,
  their loggers raised to ERROR and their progress bars switched off.
- `after_first_use`, when the first embedder call of the process returned (`hybrid.embedder.bounded`): what the model's
  load printed once (a terminal) is not printed again: their warnings are ignored from then on (Python's `once`
  starts again whenever the filters change, which every `warnings.catch_warnings()` block does), the loggers are
  raised to ERROR and the bars switched off.

A setting the host made is kept: a variable already in the environment, a logger level other than the libraries'
defaults (NOTSET, WARNING), and `TRANSFORMERS_VERBOSITY` when the host set it. Errors always show.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import warnings
from typing import Literal

__all__ = ('LIBRARIES', 'MODULES', 'QUIET_ENVIRONMENT', 'after_first_use', 'before_first_use', 'piped')

LIBRARIES = ('sentence_transformers', 'transformers', 'huggingface_hub', 'tokenizers', 'torch', 'safetensors')
"""The packages whose loggers, warnings and progress bars are kept quiet (top-level module names)."""
QUIET_ENVIRONMENT = {
    'HF_HUB_DISABLE_PROGRESS_BARS': '1',  # huggingface_hub's and transformers' bars ("Loading weights: 100%")
    'TRANSFORMERS_VERBOSITY': 'error',  # transformers' own log lines below errors
    'TRANSFORMERS_NO_ADVISORY_WARNINGS': '1',
    'TOKENIZERS_PARALLELISM': 'false',  # tokenizers' warning when a process forks after it used its threads
}
"""What `before_first_use` sets where the environment does not say otherwise (read when those libraries are
imported)."""
MODULES = rf'({"|".join(LIBRARIES)})(\..*)?'
"""The Python warnings filter's module pattern of `LIBRARIES` (a warning raised from their code)."""
_HOST_ENVIRONMENT = frozenset(name for name in QUIET_ENVIRONMENT if name in os.environ)
"""The variables of `QUIET_ENVIRONMENT` the environment set before this package was imported (the host's)."""
_PATTERNS = (MODULES, MODULES + r'\Z')
"""`MODULES` as `warnings.filterwarnings` compiles it (an end anchor appended since Python 3.12), to find it."""
_FILTER: list[Literal['ignore', 'once']] = []
"""The warnings action chosen once per process by `before_first_use` (`ignore` when piped, else `once`)."""
_DONE: set[str] = set()
"""Which of `before`, `after` ran in this process."""
_LOCK = threading.Lock()


def piped() -> bool:
    """Whether stderr is not a terminal (a pipe, a file, a service's log, or no stderr at all)."""
    try:
        return not (sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError, OSError):  # replaced by an object without isatty, or closed
        return True


def _once(moment: str) -> bool:
    with _LOCK:
        if moment in _DONE:
            return False
        _DONE.add(moment)
        return True


def before_first_use() -> None:
    """Before a model library first loads in this process (see the module docstring), and before every embedder call
    (`hybrid.embedder.bounded`): the first call does what the module docstring says; every call puts the warnings filter
    back at the front of `warnings.filters` if it is gone (a `warnings.catch_warnings()` block of another thread,
    entered before it was added and left after, restores the list without it)."""
    if 'before' not in _DONE and _once('before'):
        for name, value in QUIET_ENVIRONMENT.items():
            os.environ.setdefault(name, value)
        _FILTER[:] = ['ignore' if piped() else 'once']
        if _FILTER[0] == 'ignore':
            _silence()
    action = _FILTER[0] if _FILTER else None
    if action is not None and not any(
        f[0] == action and f[3] is not None and f[3].pattern in _PATTERNS for f in warnings.filters[:8]
    ):
        warnings.filterwarnings(action, module=MODULES)


def after_first_use() -> None:
    """After the first embedder call of this process returned (see the module docstring); later calls do nothing."""
    if _DONE and 'after' in _DONE:  # the common case, without the lock
        return
    if _once('after'):
        _FILTER[:] = ['ignore']  # `once` starts again whenever the filters change (another block of catch_warnings)
        _silence()


def _silence() -> None:
    """Raise the libraries' loggers to ERROR (those the host left at a default level) and switch off the progress
    bars of those already imported."""
    for name in LIBRARIES:
        if name == 'transformers' and 'TRANSFORMERS_VERBOSITY' in _HOST_ENVIRONMENT:
            continue
        logger = logging.getLogger(name)
        if logger.level in (logging.NOTSET, logging.WARNING):
            logger.setLevel(logging.ERROR)
    if 'HF_HUB_DISABLE_PROGRESS_BARS' in _HOST_ENVIRONMENT:
        return
    hub = sys.modules.get('huggingface_hub.utils')
    if hub is not None and hasattr(hub, 'disable_progress_bars'):
        with contextlib.suppress(Exception):  # a version that refuses: its bars show
            hub.disable_progress_bars()
    transformers_logging = sys.modules.get('transformers.utils.logging')
    if transformers_logging is not None and hasattr(transformers_logging, 'disable_progress_bar'):
        with contextlib.suppress(Exception):
            transformers_logging.disable_progress_bar()
