"""Argument checks every store applies: caller errors raise `ValueError`, whatever the backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ('MAX_HASH_BYTES', 'check_claim', 'check_hashes', 'check_items', 'check_model')

MAX_HASH_BYTES = 64
"""The longest hash a store accepts (BLAKE2b's longest digest); the hashes used are 16 bytes."""


def check_model(model: object) -> None:
    """Raises `ValueError` unless `model` is a non-empty str."""
    if not isinstance(model, str) or not model:
        raise ValueError(f'an embedding store model must be a non-empty str, got {model!r}')


def check_hashes(hashes: Sequence[bytes]) -> None:
    """Raises `ValueError` unless every hash is `bytes` of 1-`MAX_HASH_BYTES` bytes."""
    if set(map(type, hashes)) == {bytes} and min(map(len, hashes)) > 0 and max(map(len, hashes)) <= MAX_HASH_BYTES:
        return  # the usual call, checked at C speed
    for h in hashes:
        if not isinstance(h, bytes) or not 0 < len(h) <= MAX_HASH_BYTES:
            raise ValueError(f'an embedding store hash must be 1-{MAX_HASH_BYTES} bytes, got {h!r}')


def check_items(items: Mapping[bytes, bytes]) -> None:
    """Raises `ValueError` for a bad hash (`check_hashes`) or a vector that is not non-empty bytes of a multiple of 4."""
    check_hashes(list(items))
    for vector in items.values():
        if not isinstance(vector, bytes) or not vector or len(vector) % 4:
            raise ValueError(
                f'an embedding store vector must be non-empty little-endian float32 bytes (a multiple of 4), '
                f'got {type(vector).__name__} of {len(vector) if isinstance(vector, bytes) else "?"} bytes'
            )


def check_claim(limit: object, seconds: object) -> None:
    """Raises `ValueError` unless `limit` is a positive int and `seconds` a positive number."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f'claim limit must be a positive int, got {limit!r}')
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ValueError(f'claim seconds must be a positive number, got {seconds!r}')
