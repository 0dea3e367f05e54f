"""BERT's WordPiece tokenizer from a folder's `tokenizer.json`, in plain Python: the `tokenizers` library's
`BertNormalizer`, `BertPreTokenizer`, `WordPiece` model and `[CLS] ... [SEP]` template, for the models
`LocalEmbeddingModel` runs (so the `local` extra needs no tokenizer package, nor the model-hub client it pulls).

Why our own code and not the well-kept `tokenizers` library (which the team prefers outside search and ranking):
the `local` extra must add under 100 MB to the base install, and `tokenizers` does not fit. Measured in a fresh
CPython 3.11 venv (pip 26.3, `du`): the base install (pydantic-ai-slim, rich) 85 MB; `pip install numpy safetensors`
adds 74 MB (numpy 45 MB and its bundled OpenBLAS 28 MB, safetensors 1.4 MB); `pip install tokenizers` on top adds
41 MB more, 115 MB in all: tokenizers 11.5 MB and the dependencies it requires, huggingface_hub 7.8 MB, hf_xet
11.2 MB, pyyaml 3.3 MB, fsspec 2.2 MB, filelock 1.9 MB, click 1.0 MB, tqdm 0.6 MB (installed always: `tokenizers`
requires `huggingface-hub`). The only call is `encode(text)` (ids with `[CLS]` and `[SEP]`), so the swap is one
line if the bound changes; the ids are compared with `tokenizers`' in the tests (reference texts, 8,587 tool texts,
generated text), which the test extra installs.

Rules, as `tokenizers` applies them (tests/test_local_embedder.py compares the ids with it):

- special tokens (`added_tokens`) written in the text are matched first, as they are;
- normalizer: drop NUL, U+FFFD and control characters (Cc, Cf, Co, Cs, but tab, newline and carriage return),
  whitespace to spaces; spaces around CJK ideographs; accents stripped (NFD, marks Mn dropped) when `strip_accents`
  is true, or when it is null and `lowercase` is; lowercase;
- pre-tokenizer: split on whitespace, each punctuation character (ASCII punctuation and symbols, Unicode P*) alone;
- WordPiece: longest vocabulary match first, continuations prefixed `##`; a word that cannot be matched whole, or
  longer than `max_input_chars_per_word`, is the unknown token.

Character classes come from Python's `unicodedata`: a character assigned in a Unicode version newer than the
tables `tokenizers` was built with may be classified differently (U+1CF00, a Unicode 14 mark, is dropped here as an
accent, kept there as an unknown word); text of tool descriptions does not use them.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

__all__ = ('WordPiece',)

_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),  # from 0x2B920 as `tokenizers` has it (BERT's own list says 0x2B820)
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_ASCII_PUNCTUATION = frozenset('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')
_WHITESPACE = frozenset(
    '\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a'
    '\u2028\u2029\u202f\u205f\u3000'
)
"""Unicode's White_Space characters (Rust's `char::is_whitespace`, which `tokenizers` uses)."""
_CONTROL = frozenset({'Cc', 'Cf', 'Co', 'Cs'})
"""The general categories `tokenizers` drops as control characters (unassigned code points, Cn, are kept)."""


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith('P')


class WordPiece:
    """A BERT WordPiece tokenizer read from `tokenizer.json`.

    Raises:
        ValueError: at construction, a tokenizer of another kind (not `BertNormalizer` + `BertPreTokenizer` +
            `WordPiece` with a `[CLS] $A [SEP]` template), named with the file.
    """

    def __init__(self, path: Path) -> None:
        spec: dict[str, Any] = json.loads(path.read_text(encoding='utf-8'))
        normalizer = spec.get('normalizer') or {}
        pre = spec.get('pre_tokenizer') or {}
        model = spec.get('model') or {}
        if normalizer.get('type') != 'BertNormalizer' or pre.get('type') != 'BertPreTokenizer':
            raise ValueError(f'{path}: only BERT tokenizers (BertNormalizer, BertPreTokenizer) are supported')
        if model.get('type') != 'WordPiece':
            raise ValueError(f'{path}: only WordPiece tokenizers are supported')
        self.vocab: dict[str, int] = {str(k): int(v) for k, v in model['vocab'].items()}
        self.unknown = self.vocab[model.get('unk_token', '[UNK]')]
        self.prefix: str = model.get('continuing_subword_prefix', '##')
        self.max_chars = int(model.get('max_input_chars_per_word', 100))
        self.clean = bool(normalizer.get('clean_text', True))
        self.chinese = bool(normalizer.get('handle_chinese_chars', True))
        self.lowercase = bool(normalizer.get('lowercase', True))
        strip = normalizer.get('strip_accents')
        self.strip_accents = self.lowercase if strip is None else bool(strip)
        self.first, self.last = self._template(spec.get('post_processor'), path)
        added = sorted(
            (t for t in spec.get('added_tokens') or [] if t.get('content')), key=lambda t: -len(t['content'])
        )
        self.added = {t['content']: int(t['id']) for t in added}
        self._added = re.compile('|'.join(re.escape(t['content']) for t in added)) if added else None

    def _template(self, post: Any, path: Path) -> tuple[list[int], list[int]]:
        """The ids before and after a single sequence (`[CLS]` and `[SEP]`)."""
        if not post:
            return [], []
        if post.get('type') == 'BertProcessing':
            return [int(post['cls'][1])], [int(post['sep'][1])]
        if post.get('type') != 'TemplateProcessing':
            raise ValueError(f'{path}: post-processor {post.get("type")!r} is not supported')
        first: list[int] = []
        last: list[int] = []
        seen = False
        for piece in post['single']:
            if 'Sequence' in piece:
                seen = True
                continue
            token = piece['SpecialToken']['id']
            ids = [int(i) for i in post['special_tokens'][token]['ids']]
            (last if seen else first).extend(ids)
        return first, last

    def _normalize(self, text: str) -> str:
        out = []
        for char in text:
            code = ord(char)
            if self.clean:  # drop NUL, U+FFFD and controls (not tab, newline, return), then whitespace to spaces
                if code == 0 or code == 0xFFFD or (char not in '\t\n\r' and unicodedata.category(char) in _CONTROL):
                    continue
                if char in _WHITESPACE:
                    out.append(' ')
                    continue
            if self.chinese and _is_cjk(code):
                out.append(f' {char} ')
            else:
                out.append(char)
        normalized = ''.join(out)
        if self.strip_accents:
            normalized = ''.join(c for c in unicodedata.normalize('NFD', normalized) if unicodedata.category(c) != 'Mn')
        return ''.join(c.lower() for c in normalized) if self.lowercase else normalized  # per character, as Rust

    def _words(self, text: str) -> list[str]:
        words: list[str] = []
        current: list[str] = []
        for char in text:
            if char in _WHITESPACE:
                if current:
                    words.append(''.join(current))
                    current = []
            elif _is_punctuation(char):
                if current:
                    words.append(''.join(current))
                    current = []
                words.append(char)
            else:
                current.append(char)
        if current:
            words.append(''.join(current))
        return words

    def _pieces(self, word: str, out: list[int]) -> None:
        if len(word) > self.max_chars:
            out.append(self.unknown)
            return
        found: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    found.append(self.vocab[piece])
                    break
                end -= 1
            if end == start:
                out.append(self.unknown)
                return
            start = end
        out.extend(found)

    def _plain(self, text: str, out: list[int]) -> None:
        for word in self._words(self._normalize(text)):
            self._pieces(word, out)

    def encode(self, text: str) -> list[int]:
        """The ids of `text`, `[CLS]` and `[SEP]` included, not cut."""
        ids = list(self.first)
        at = 0
        if self._added is not None:
            for match in self._added.finditer(text):
                self._plain(text[at : match.start()], ids)
                ids.append(self.added[match.group(0)])
                at = match.end()
        self._plain(text[at:], ids)
        ids.extend(self.last)
        return ids
