"""The stand-in's `transformers.utils.logging.disable_progress_bar`, where the real library has it."""

from .. import disable_progress_bar

__all__ = ('disable_progress_bar',)
