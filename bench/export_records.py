"""Export the records of `bench/perf.py`'s corpus for the Rust benches of `src/index/bench.rs`.

    .venv-bench/bin/python -m bench.export_records /tmp/records.tsv [N]
    TOOLPROXY_RECORDS=/tmp/records.tsv cargo test --release --lib build_phases -- --ignored --nocapture

With `N` = `quality`: the 1,582 BFCL tools of `bench/lib/corpus.py` (the quality benchmark's corpus), in its order,
the order of the tool vectors `bench/export_vectors.py` writes (`src/index/bench_hybrid.rs` reads both).

One tab-separated line per record: key, group, tool, description, parameter names, parameter texts (names and
texts separated by U+001F; tabs and newlines in the text become spaces). The parameter text is gathered as the
core's `collect_parameter_text` gathers it (keys of `properties` mappings; `description`, `title` and string
`enum` items inside property schemas), without its size caps.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.lib.replicas import corpus, records
from examples.bfcl_tools import load_bfcl_functions


def walk(node: Any, names: list[str], texts: list[str], depth: int = 0, in_property: bool = False) -> None:
    if depth >= 32:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                continue
            if key == 'properties' and isinstance(value, dict):
                for name, schema in value.items():
                    if isinstance(name, str):
                        names.append(name)
                    walk(schema, names, texts, depth + 2, True)
            elif key in ('description', 'title') and in_property:
                if isinstance(value, str) and value:
                    texts.append(value)
            elif key == 'enum' and in_property:
                if isinstance(value, list):
                    texts.extend(item for item in value if isinstance(item, str) and item)
            else:
                walk(value, names, texts, depth + 1, in_property)
    elif isinstance(node, (list, tuple)):
        for item in node:
            walk(item, names, texts, depth + 1, in_property)


def clean(text: str) -> str:
    return text.replace('\t', ' ').replace('\n', ' ').replace('\x1f', ' ')


def main() -> None:
    out = Path(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == 'quality':
        from bench.lib.corpus import load_tools
        from bench.lib.replicas import Fn

        fns = [Fn(t.name, t.group, t.description, t.parameters) for t in load_tools()]
    else:
        fns = corpus(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000, load_bfcl_functions())
    with out.open('w', encoding='utf-8') as f:
        for key, group, tool, description, parameters in records(fns):
            names: list[str] = []
            texts: list[str] = []
            walk(parameters, names, texts)
            fields = [key, group, tool, description, '\x1f'.join(map(clean, names)), '\x1f'.join(map(clean, texts))]
            f.write('\t'.join(clean(field) for field in fields[:4]) + '\t' + '\t'.join(fields[4:]) + '\n')


if __name__ == '__main__':
    main()
