"""A throwaway PostgreSQL server for the store tests and the fleet benchmark (`bench.fleet_store`): its own cluster in a temp dir, on a unix socket only.

`initdb`, `pg_ctl` and `postgres` refuse to run as root, so as root they run as the `postgres` user
(`runuser -u postgres --`), which must exist (Debian's `postgresql-15` package makes it). The binaries are looked
up on PATH, then under `/usr/lib/postgresql/*/bin` (Debian's layout). A machine without them fails loudly: the
contract tests never skip (`.ci/run` installs the package when it is absent).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ('PostgresServer', 'start_postgres')


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f'/usr/lib/postgresql/*/bin/{name}'), reverse=True):
        return candidate
    raise RuntimeError(
        f'PostgreSQL binary {name!r} not found on PATH or under /usr/lib/postgresql/*/bin: install the server '
        "(Debian: 'apt-get install postgresql-15'); the store contract tests need a real server"
    )


def _as_owner(argv: list[str]) -> list[str]:
    return ['runuser', '-u', 'postgres', '--', *argv] if os.geteuid() == 0 else argv


@dataclass
class PostgresServer:
    """A running throwaway cluster: `url()` names a database on it; `stop()` ends it and removes its files."""

    root: Path
    socket_dir: Path
    port: int = 5432

    @property
    def data(self) -> Path:
        return self.root / 'data'

    def url(self, dbname: str = 'postgres', user: str = 'postgres', password: str | None = None) -> str:
        """A libpq URL over the unix socket (`host` is the socket folder, percent-encoded)."""
        from urllib.parse import quote

        auth = user if password is None else f'{user}:{quote(password, safe="")}'
        return f'postgresql://{auth}@/{dbname}?host={quote(str(self.socket_dir), safe="")}&port={self.port}'

    def psql(self, sql: str, dbname: str = 'postgres') -> str:
        """Run `sql` as the superuser; returns psql's output.

        Raises:
            subprocess.CalledProcessError: psql failed.
        """
        out = subprocess.run(
            [
                'psql',
                '-X',
                '-q',
                '-A',
                '-t',
                '-h',
                str(self.socket_dir),
                '-p',
                str(self.port),
                '-U',
                'postgres',
                '-d',
                dbname,
                '-v',
                'ON_ERROR_STOP=1',
                '-c',
                sql,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def pg_ctl(self, *args: str) -> None:
        subprocess.run(_as_owner([_binary('pg_ctl'), '-D', str(self.data), *args]), check=True, capture_output=True)

    def restart(self) -> None:
        """Stop (fast) and start again: every open connection is cut."""
        self.pg_ctl('-m', 'fast', '-w', 'restart', '-o', self._options())

    def stop_server(self) -> None:
        self.pg_ctl('-m', 'immediate', '-w', 'stop')

    def start_server(self) -> None:
        self.pg_ctl('-w', '-l', str(self.root / 'log'), 'start', '-o', self._options())

    def _options(self) -> str:
        return f"-k {self.socket_dir} -c listen_addresses='' -p {self.port} -c fsync=off -c max_connections=60"

    def stop(self) -> None:
        """Stop the server and remove its files (idempotent)."""
        if self.data.exists():
            subprocess.run(
                _as_owner([_binary('pg_ctl'), '-D', str(self.data), '-m', 'immediate', '-w', 'stop']),
                capture_output=True,
            )
        shutil.rmtree(self.root, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """Make a cluster in a new temp dir (trust authentication on the socket, `fsync` off) and start it.

    Raises:
        RuntimeError: the binaries are missing, or the cluster would not start (with its log's end).
    """
    root = Path(tempfile.mkdtemp(prefix='toolproxy-pg-'))
    os.chmod(root, 0o777)  # the postgres user writes here when the tests run as root
    socket_dir = root / 'socket'
    socket_dir.mkdir()
    os.chmod(socket_dir, 0o777)
    server = PostgresServer(root, socket_dir)
    try:
        subprocess.run(
            _as_owner(
                [_binary('initdb'), '-D', str(server.data), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']
            ),
            check=True,
            capture_output=True,
            text=True,
        )
        server.start_server()
    except subprocess.CalledProcessError as e:
        log = (root / 'log').read_text(errors='replace')[-2000:] if (root / 'log').exists() else ''
        server.stop()
        raise RuntimeError(f'PostgreSQL would not start: {e.stderr or e.stdout}\n{log}') from e
    return server
