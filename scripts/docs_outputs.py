"""Regenerate the command outputs shown in README.md and docs/*.md, or check that they are current.

A ```console block holds one or more commands, each a line starting with `$ `, each followed by its output.
This script runs every command with bash from the repository root (the running interpreter's `bin/` first
on PATH, so `toolproxy` and `python` are this environment's; stdout and stderr both captured, as piped)
and puts what it printed under it.

    python scripts/docs_outputs.py           # rewrite the files in place
    python scripts/docs_outputs.py --check   # exit 1 with a diff when any shown output differs

`bash scripts/docs-outputs` runs this in .venv; tests/test_docs.py runs the check.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r'^```console\n(.*?)^```$', re.S | re.M)
# Variables that make a program decide about terminals or colours; docs show plain, piped output.
CLEARED = ('COLUMNS', 'LINES', 'FORCE_COLOR', 'TTY_COMPATIBLE', 'NO_COLOR', 'CLICOLOR_FORCE')


def doc_files() -> list[Path]:
    """README.md and every Markdown file under docs/, in a stable order."""
    return [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]


def run(command: str, timeout: float = 600) -> str:
    """What `command` prints (stdout and stderr interleaved) when run by bash from the repository root.

    Raises:
        subprocess.TimeoutExpired: the command ran longer than `timeout` seconds.
    """
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env['PATH'] = f'{Path(sys.executable).parent}{os.pathsep}{env.get("PATH", "")}'
    proc = subprocess.run(
        ['bash', '-c', command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    return proc.stdout


def render(text: str, workers: int = 3) -> str:
    """`text` (a Markdown document) with the output under every `$ ` command of its console blocks regenerated.

    The commands run `workers` at a time (each runs alone in its own process, so order cannot matter).
    """
    blocks = list(BLOCK.finditer(text))
    commands = [[line[2:] for line in m.group(1).splitlines() if line.startswith('$ ')] for m in blocks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outputs = (
            dict(
                zip(
                    (c for cs in commands for c in cs),
                    pool.map(run, (c for cs in commands for c in cs)),
                )
            )
            if any(commands)
            else {}
        )
    pieces, last = [], 0
    for match, cs in zip(blocks, commands):
        pieces.append(text[last : match.start()])
        if cs:
            parts = [f'$ {c}\n{outputs[c]}' + ('' if outputs[c].endswith('\n') or not outputs[c] else '\n') for c in cs]
            pieces.append('```console\n' + '\n'.join(parts) + '```')
        else:
            pieces.append(match.group(0))
        last = match.end()
    pieces.append(text[last:])
    return ''.join(pieces)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--check', action='store_true', help='do not write; exit 1 when an output differs')
    args = parser.parse_args()
    stale = 0
    for path in doc_files():
        old = path.read_text()
        new = render(old)
        if new == old:
            continue
        stale += 1
        name = str(path.relative_to(ROOT))
        if args.check:
            sys.stdout.writelines(
                difflib.unified_diff(old.splitlines(True), new.splitlines(True), name, f'{name} (now)')
            )
        else:
            path.write_text(new)
            print(f'docs-outputs: updated {name}', file=sys.stderr)
    if args.check and stale:
        print(
            f'docs-outputs: {stale} file(s) show outputs that differ from what the commands print now;'
            ' run `bash scripts/docs-outputs`',
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
