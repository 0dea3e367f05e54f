"""What the release workflow ships, checked here (slow tier: `bash scripts/test` runs it).

- The workflows (`.github/workflows/`) pass actionlint and zizmor (both from the `[test]` extra), and zizmor would
  catch an action that is not pinned by commit.
- The release workflow builds and smoke-tests every platform the README promises, and publishes only by trusted
  publishing on a version tag, with provenance attestations.
- The sdist holds what a build needs and nothing else; a wheel built from the sdist alone (pip, isolated build) the
  way the workflow builds Linux wheels (maturin, manylinux2014: here with zig instead of the manylinux container)
  passes `auditwheel show` for the tag its name claims, holds the package and nothing else (listed with sizes), and
  installed into a clean virtual environment passes `scripts/smoke.py` (the workflows' smoke test).
- The Rust core compiles for every wheel's target (aarch64 Linux and macOS, Windows x64, musl), clippy-clean on
  aarch64: the SIMD kernels are x86_64-only and the portable path is what the others build.

The cargo builds share `target/release-check/` between runs (CARGO_TARGET_DIR), so a second run recompiles only this
crate, not its dependencies.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / '.github' / 'workflows'
BIN = Path(sys.executable).parent
TARGET_DIR = ROOT / 'target' / 'release-check'
VERSION = tomllib.loads((ROOT / 'Cargo.toml').read_text())['package']['version']
CLAIMED_TAG = 'manylinux_2_17_x86_64'  # manylinux2014, what the workflow's `manylinux: manylinux2014` builds
WHEEL_TARGETS = [
    'aarch64-unknown-linux-gnu',
    'aarch64-unknown-linux-musl',
    'aarch64-apple-darwin',
    'x86_64-pc-windows-msvc',
]


def tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f'{name} is missing beside {sys.executable}: `bash scripts/bootstrap --test` installs it'
    return str(path)


def run(argv: list[str], *, timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload, no-any-return]


def show(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Print past pytest's capture, so `scripts/test` shows it."""
    with capsys.disabled():
        print(f'\n{text}', file=sys.stderr)


# --- the workflows


def test_workflows_pass_actionlint() -> None:
    proc = run([tool('actionlint'), '-no-color'], cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in WORKFLOWS.iterdir()) == ['ci.yml', 'release.yml']


def test_workflows_pass_zizmor() -> None:
    proc = run([tool('zizmor'), '--offline', '--persona=auditor', '--no-progress', str(WORKFLOWS)], cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_would_catch_an_action_pinned_by_tag(tmp_path: Path) -> None:
    text = (WORKFLOWS / 'release.yml').read_text()
    pinned = re.search(r'uses: (actions/checkout)@[0-9a-f]{40} # (v[\d.]+)', text)
    assert pinned is not None
    folder = tmp_path / '.github' / 'workflows'
    folder.mkdir(parents=True)
    (folder / 'release.yml').write_text(text.replace(pinned.group(0), f'uses: {pinned.group(1)}@{pinned.group(2)}', 1))
    proc = run([tool('zizmor'), '--offline', '--no-progress', str(folder)], cwd=tmp_path)
    assert proc.returncode != 0 and 'unpinned-uses' in proc.stdout, proc.stdout + proc.stderr


def test_every_action_is_pinned_by_commit_with_its_tag() -> None:
    for path in WORKFLOWS.iterdir():
        for line in path.read_text().splitlines():
            if 'uses:' in line:
                assert re.search(r'uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+(\.\d+)*$', line), f'{path.name}: {line}'


def test_the_release_builds_tests_and_publishes_every_platform_of_the_readme() -> None:
    text = (WORKFLOWS / 'release.yml').read_text()
    assert "tags: ['v*']" in text
    for needed in (
        'target: [x86_64, aarch64]',
        'libc: [manylinux2014, musllinux_1_2]',
        'platform: linux/arm64',  # aarch64 under QEMU
        'docker/setup-qemu-action@',
        '{runner: macos-15, target: aarch64}',
        '{runner: macos-15-intel, target: x86_64}',
        'runs-on: windows-2022',
        'command: sdist',
        'id-token: write',
        'actions/attest-build-provenance@',
        'pypa/gh-action-pypi-publish@',
        "if: github.event_name == 'push' && startsWith(github.ref, 'refs/tags/v')",
    ):
        assert needed in text, needed
    assert text.count('scripts/smoke.py --installed --expect-version "$VERSION"') == 4  # linux, macos, windows, sdist
    assert 'secrets.' not in text and 'password' not in text  # trusted publishing: no token anywhere
    ci = (WORKFLOWS / 'ci.yml').read_text()
    assert 'run: bash scripts/test' in ci and 'scripts/smoke.py --installed' in ci
    readme = (ROOT / 'README.md').read_text()
    for platform in ('Linux x86_64 and aarch64', 'musllinux', 'macOS arm64 and x86_64', 'Windows x64'):
        assert platform in readme, platform


# --- the sdist and the Linux wheel


@pytest.fixture(scope='module')
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp('sdist')
    proc = run([tool('maturin'), 'sdist', '--out', str(out)], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    (found,) = out.glob('*.tar.gz')
    return found


def test_the_sdist_holds_what_a_build_needs_and_nothing_else(sdist: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with tarfile.open(sdist) as tar:
        names = {m.name.split('/', 1)[1] for m in tar.getmembers() if m.isfile()}
    tops = sorted({name.split('/', 1)[0] for name in names})
    show(f'sdist {sdist.name}: {sdist.stat().st_size:,} bytes, {len(names)} files in {", ".join(tops)}', capsys)
    assert tops == [
        'CHANGELOG.md', 'Cargo.lock', 'Cargo.toml', 'LICENSE', 'PKG-INFO', 'README.md', 'docs', 'pyproject.toml',
        'python', 'src',
    ]  # fmt: skip
    tracked = run(['git', 'ls-files', 'src', 'python'], cwd=ROOT).stdout.split()
    assert tracked and set(tracked) <= names  # every source file of the build
    assert sdist.stat().st_size < 1_000_000


@pytest.fixture(scope='module')
def wheel(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Linux wheel, built by pip from the sdist alone (an isolated build that downloads maturin from PyPI), as
    the workflow builds it: `maturin build --release --locked` for manylinux2014 (zig links against glibc 2.17)."""
    import ziglang  # the [test] extra: the zig compiler maturin's --zig uses

    out = tmp_path_factory.mktemp('wheel')
    env = {
        **os.environ,
        'PATH': f'{Path(ziglang.__file__).parent}{os.pathsep}{os.environ["PATH"]}',
        'MATURIN_PEP517_ARGS': '--zig --compatibility manylinux2014 --locked',
        'CARGO_TARGET_DIR': str(TARGET_DIR),
    }
    argv = [sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps', '--no-cache-dir', '-w', str(out), str(sdist)]
    proc = run(argv, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (found,) = out.glob('*.whl')
    return found


def test_the_wheel_passes_auditwheel_for_the_tag_it_claims(wheel: Path) -> None:
    assert wheel.name == f'pydantic_ai_toolproxy-{VERSION}-cp311-abi3-manylinux2014_x86_64.{CLAIMED_TAG}.whl'
    proc = run([tool('auditwheel'), 'show', str(wheel)])
    assert proc.returncode == 0, proc.stderr
    said = ' '.join(proc.stdout.split())
    assert f'is consistent with the following platform tag: "{CLAIMED_TAG}"' in said, said


def test_the_wheel_holds_the_package_and_nothing_else(wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
    listing = '\n'.join(f'  {info.file_size:>10,}  {info.filename}' for info in infos)
    show(f'wheel {wheel.name}: {wheel.stat().st_size:,} bytes, {len(infos)} files\n{listing}', capsys)
    names = {info.filename for info in infos}
    dist_info = f'pydantic_ai_toolproxy-{VERSION}.dist-info/'
    assert all(name.startswith(('pydantic_ai_toolproxy/', dist_info)) for name in names)
    package = ROOT / 'python' / 'pydantic_ai_toolproxy'
    sources = {f'pydantic_ai_toolproxy/{p.relative_to(package).as_posix()}' for p in package.rglob('*.py')}
    extras = {
        'pydantic_ai_toolproxy/_core.abi3.so',
        'pydantic_ai_toolproxy/_core.pyi',
        'pydantic_ai_toolproxy/py.typed',
    }
    assert {n for n in names if not n.startswith(dist_info)} == sources | extras  # no tests, caches, build files
    assert wheel.stat().st_size < 2_000_000


def test_the_wheel_installs_into_a_clean_venv_and_passes_the_smoke_test(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    where = tmp_path_factory.mktemp('clean') / 'a venv'  # a path with a space
    venv.create(where, with_pip=True)
    python = str(where / 'bin' / 'python')
    proc = run([python, '-m', 'pip', 'install', '--quiet', '--only-binary', 'pydantic-ai-toolproxy', str(wheel)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ('VIRTUAL_ENV', 'PYTHONPATH')}
    proc = run([python, 'scripts/smoke.py', '--installed', '--expect-version', VERSION], cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1].startswith('smoke: all passed on linux-x86_64'), proc.stdout
    show(proc.stdout.rstrip(), capsys)


# --- the core on every wheel's target


@pytest.fixture(scope='module')
def installed_targets() -> Iterator[set[str]]:
    rustup = shutil.which('rustup')
    assert rustup is not None, 'rustup is needed to check the other targets'
    yield set(run([rustup, 'target', 'list', '--installed']).stdout.split())


def cargo_for(targets: list[str], installed: set[str], *argv: str) -> None:
    for target in targets:
        assert target in installed, f'`rustup target add {target}` (bash scripts/bootstrap --test does)'
    env = {**os.environ, 'CARGO_TARGET_DIR': str(TARGET_DIR)}
    cargo = ['cargo', argv[0], '--quiet', '--locked', '--features', 'python', *(f'--target={t}' for t in targets)]
    proc = run([*cargo, *argv[1:]], cwd=ROOT, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_the_core_and_its_tests_are_clippy_clean_on_aarch64(installed_targets: set[str]) -> None:
    """The target where only the portable kernels exist: the x86_64 `cfg`s leave nothing unused or missing."""
    cargo_for(['aarch64-unknown-linux-gnu'], installed_targets, 'clippy', '--all-targets', '--', '-D', 'warnings')


def test_the_core_compiles_for_the_other_wheel_targets(installed_targets: set[str]) -> None:
    cargo_for([t for t in WHEEL_TARGETS if t != 'aarch64-unknown-linux-gnu'], installed_targets, 'check', '--lib')
