"""A stand-in for a model library (tests/test_quiet_host.py): named `transformers`, so the package treats it as one.
Every `encode` logs an advisory line on its logger, warns a FutureWarning, and draws a progress bar on stderr
unless `disable_progress_bar` was called or `HF_HUB_DISABLE_PROGRESS_BARS=1` was set when it was imported, as the
real library does."""

from __future__ import annotations

import logging
import os
import sys
import warnings

CALLS = [0]
"""How many times `encode` ran."""
_BARS = [os.environ.get('HF_HUB_DISABLE_PROGRESS_BARS') != '1']


def disable_progress_bar() -> None:
    _BARS[0] = False


def encode(texts: list[str]) -> list[list[float]]:
    CALLS[0] += 1
    logging.getLogger('transformers.modeling_utils').warning('ADVISORY line of the model library')
    warnings.warn('DEPRECATED argument of the model library', FutureWarning, stacklevel=1)
    if _BARS[0]:
        sys.stderr.write('PROGRESS 100%|##########|\n')
    return [[float(len(text) % 7 + 1), 1.0, float(sum(map(ord, text)) % 5)] for text in texts]
